package facts

import (
	"fmt"
	"strings"
)

// Health statuses, worst last.
const (
	HealthOK   = "ok"
	HealthWarn = "warn"
	HealthFail = "fail"
)

// RetiredPagesRMAThreshold is NVIDIA's RMA threshold for dynamic page
// retirement (single-bit plus double-bit retired pages, V100/T4 class).
const RetiredPagesRMAThreshold = 60

// GPUHealth is a per-GPU verdict for `gpukit status` and nvidia/verify:
// what makes results untrustworthy or calls for an RMA (Fails), and what is
// degraded or needs a reset, reboot or configuration change (Warns). Each
// says what to do.
type GPUHealth struct {
	BusID string   `json:"busID,omitempty"`
	UUID  string   `json:"uuid,omitempty"`
	Fails []string `json:"fails,omitempty"`
	Warns []string `json:"warns,omitempty"`
}

// Status is "fail" with any failure, else "warn" with any warning, else "ok".
func (h GPUHealth) Status() string {
	switch {
	case len(h.Fails) > 0:
		return HealthFail
	case len(h.Warns) > 0:
		return HealthWarn
	}
	return HealthOK
}

// Reasons are the failures then the warnings, each led by its severity
// ("fail: ", "warn: "), for display.
func (h GPUHealth) Reasons() []string {
	out := make([]string, 0, len(h.Fails)+len(h.Warns))
	for _, r := range h.Fails {
		out = append(out, HealthFail+": "+r)
	}
	for _, r := range h.Warns {
		out = append(out, HealthWarn+": "+r)
	}
	return out
}

// Health judges one GPU from what nvidia-smi reported. Unreported values
// never produce a reason.
func (g SMIGPU) Health() GPUHealth {
	var fails, warns []string
	fail := func(format string, a ...any) { fails = append(fails, fmt.Sprintf(format, a...)) }
	warn := func(format string, a ...any) { warns = append(warns, fmt.Sprintf(format, a...)) }
	yes := func(b *bool) bool { return b != nil && *b }

	for _, e := range g.DeviceErrors {
		fail("nvidia-smi reports %q: drain and reset the GPU (or reboot); check the kernel log for XID errors, RMA if it recurs", e)
	}

	// Memory errors.
	vol, agg := g.ECC.Volatile.Uncorrected, g.ECC.Aggregate.Uncorrected
	if vol != nil && *vol > 0 {
		fail("%d uncorrectable ECC error(s) since the driver loaded (volatile): drain and reset the GPU; RMA if they recur", *vol)
	}
	if agg != nil && *agg > 0 && (vol == nil || *agg > *vol) {
		warn("%d uncorrectable ECC error(s) over the GPU's lifetime (aggregate): check retired pages/remapped rows; RMA if they keep growing", *agg)
	}
	if yes(g.ECC.UnrepairableMemory) {
		fail("memory reported unrepairable: RMA the GPU")
	}
	if yes(g.ECC.SRAMThresholdExceeded) {
		warn("SRAM uncorrectable errors exceeded the driver's threshold: contact NVIDIA support (RMA candidate)")
	}
	if yes(g.ECC.ChannelRepairPending) {
		warn("memory channel repair pending: reset the GPU to apply it")
	}
	if yes(g.ECC.TPCRepairPending) {
		warn("TPC repair pending: reset the GPU to apply it")
	}
	if yes(g.RemappedRows.Failure) {
		fail("row remapping failed: RMA the GPU")
	}
	if yes(g.RemappedRows.Pending) {
		warn("row remapping pending: reset the GPU (or reboot) to apply it")
	}
	if yes(g.RetiredPages.PendingRetirement) || yes(g.RetiredPages.PendingBlacklist) {
		warn("page retirement pending: reboot (or reset the GPU) to retire the pages")
	}
	if sb, db := g.RetiredPages.SingleBit, g.RetiredPages.DoubleBit; sb != nil || db != nil {
		total := *smiAdd(smiAdd(new(int64), sb), db)
		if total >= RetiredPagesRMAThreshold {
			warn("%d retired pages (single-bit %s, double-bit %s), at or over NVIDIA's RMA threshold of %d: plan an RMA",
				total, smiShow(sb), smiShow(db), RetiredPagesRMAThreshold)
		}
	}

	// Device state the driver asks an operator to act on.
	if yes(g.ResetRequired) {
		warn("the driver says the GPU needs a reset: drain it and reset it")
	}
	if yes(g.DrainAndResetRecommended) {
		warn("the driver recommends draining and resetting the GPU")
	}
	if a := g.RecoveryAction; a != "" && !strings.EqualFold(a, "none") {
		warn("the driver asks for GPU recovery action %q", a)
	}
	for _, x := range g.XIDs {
		warn("XID %d reported: look it up in NVIDIA's XID catalogue", x)
	}
	switch st := strings.ToLower(g.Fabric.State); {
	case st == "not started" || st == "in progress":
		warn("NVLink fabric %s: CUDA jobs cannot start until it completes; check nvidia-fabricmanager", st)
	case st == "completed" && g.Fabric.Status != "" && !strings.EqualFold(g.Fabric.Status, "success"):
		fail("NVLink fabric registration failed (%s): check nvidia-fabricmanager and the NVSwitches", g.Fabric.Status)
	}

	// Clocks and temperature.
	if len(g.ClockSlowdowns) > 0 {
		warn("clocks slowed down (%s): check cooling, power delivery and power brake signals", strings.Join(g.ClockSlowdowns, ", "))
	}
	if t, s := g.TemperatureC, g.SlowdownTempC; t != nil && s != nil && *s > 0 && *t >= *s {
		warn("GPU at %d C, at or over its slowdown threshold of %d C: check cooling", *t, *s)
	}
	if m, s := g.TLimitC, g.SlowdownTLimitC; m != nil && s != nil && *m <= *s {
		warn("GPU %d C from T.Limit, at or past its slowdown margin of %d C: check cooling", *m, *s)
	}
	if t, s := g.MemoryTempC, g.MemoryMaxTempC; t != nil && s != nil && *s > 0 && *t >= *s {
		warn("memory at %d C, at or over its maximum operating temperature of %d C: check cooling", *t, *s)
	}

	// Configuration.
	if c, p := g.MIGMode.Current, g.MIGMode.Pending; c != "" && p != "" && !strings.EqualFold(c, p) {
		warn("MIG mode change pending (current %s, pending %s): reset the GPU to apply it", c, p)
	}
	if c, p := g.ECCMode.Current, g.ECCMode.Pending; c != "" && p != "" && !strings.EqualFold(c, p) {
		warn("ECC mode change pending (current %s, pending %s): reboot or reset the GPU to apply it", c, p)
	}
	if strings.EqualFold(g.PersistenceMode, "disabled") {
		warn("persistence mode is off: gpukit enables it (nvidia-persistenced) so the driver stays initialised between jobs")
	}

	return GPUHealth{BusID: g.BusID, UUID: g.UUID, Fails: fails, Warns: warns}
}

// Health is the verdict for each GPU, in order.
func (q *SMIQuery) Health() []GPUHealth {
	if q == nil {
		return nil
	}
	out := make([]GPUHealth, 0, len(q.GPUs))
	for _, g := range q.GPUs {
		out = append(out, g.Health())
	}
	return out
}

func smiShow(v *int64) string {
	if v == nil {
		return "n/a"
	}
	return fmt.Sprint(*v)
}
