package facts

import (
	"math"
	"strconv"
	"strings"
)

// SMIQuery is what `nvidia-smi -q` (ParseSMIQueryText) or `nvidia-smi -q -x`
// (ParseSMIQueryXML) reports about a host's GPUs: both forms fill the same
// types. Zero values mean "not reported": nvidia-smi said N/A, [Not
// Supported], Unknown Error, "deprecated", or the driver does not print the
// field at all. Counters and measurements are pointers so that a reported 0
// is told apart from "not reported".
type SMIQuery struct {
	DriverVersion string `json:"driverVersion,omitempty"`
	CUDAVersion   string `json:"cudaVersion,omitempty"`
	// AttachedGPUs is what nvidia-smi says is attached; it can differ from
	// len(GPUs) (nvidia-smi -i, or output trimmed by someone).
	AttachedGPUs int      `json:"attachedGPUs,omitempty"`
	GPUs         []SMIGPU `json:"gpus,omitempty"`
}

// SMIGPU is one GPU of an SMIQuery.
type SMIGPU struct {
	// BusID is the PCI bus id, e.g. "00000000:01:00.0".
	BusID string `json:"busID,omitempty"`
	// DeviceID is the PCI device and vendor id as nvidia-smi prints it
	// ("0x26B910DE", "1EB810DE"): the GPU's architecture when the driver
	// reports none.
	DeviceID        string `json:"deviceID,omitempty"`
	ProductName     string `json:"productName,omitempty"`
	Architecture    string `json:"architecture,omitempty"`
	UUID            string `json:"uuid,omitempty"`
	Serial          string `json:"serial,omitempty"`
	VBIOS           string `json:"vbios,omitempty"`
	PersistenceMode string `json:"persistenceMode,omitempty"` // "Enabled" or "Disabled"

	MIGMode    SMIMode        `json:"migMode,omitzero"`
	MIGDevices []SMIMIGDevice `json:"migDevices,omitempty"`

	MemoryTotalMiB *int64 `json:"memoryTotalMiB,omitempty"` // framebuffer
	MemoryUsedMiB  *int64 `json:"memoryUsedMiB,omitempty"`

	TemperatureC *int64 `json:"temperatureC,omitempty"`
	// SlowdownTempC is the absolute HW slowdown threshold, where reported.
	SlowdownTempC *int64 `json:"slowdownTempC,omitempty"`
	// TLimitC is the current margin to the T.Limit threshold (newer drivers,
	// "GPU T.Limit Temp"); SlowdownTLimitC is the margin at which HW
	// slowdown starts (relative, usually negative).
	TLimitC         *int64 `json:"tLimitC,omitempty"`
	SlowdownTLimitC *int64 `json:"slowdownTLimitC,omitempty"`
	MemoryTempC     *int64 `json:"memoryTempC,omitempty"`
	MemoryMaxTempC  *int64 `json:"memoryMaxTempC,omitempty"`

	PowerDrawW  *float64 `json:"powerDrawW,omitempty"`
	PowerLimitW *float64 `json:"powerLimitW,omitempty"` // the enforced limit

	GPUUtilPercent    *int64 `json:"gpuUtilPercent,omitempty"`
	MemoryUtilPercent *int64 `json:"memoryUtilPercent,omitempty"`

	ECCMode      SMIMode         `json:"eccMode,omitzero"`
	ECC          SMIECC          `json:"ecc,omitzero"`
	RetiredPages SMIRetiredPages `json:"retiredPages,omitzero"` // pre-Ampere
	RemappedRows SMIRemappedRows `json:"remappedRows,omitzero"` // Ampere and later

	// ClockSlowdowns are the active clocks throttle/event reasons that mean
	// trouble (hw_slowdown, hw_thermal_slowdown, hw_power_brake_slowdown,
	// sw_thermal_slowdown). ClockEvents are the other active ones, which are
	// normal operation (gpu_idle, applications_clocks_setting, sw_power_cap,
	// sync_boost, display_clocks_setting) or unknown to this parser.
	ClockSlowdowns []string `json:"clockSlowdowns,omitempty"`
	ClockEvents    []string `json:"clockEvents,omitempty"`

	// XIDs are XID event codes, only where the output has an "xid" element
	// or key (current drivers print none in -q).
	XIDs []int `json:"xids,omitempty"`

	Fabric SMIFabric `json:"fabric,omitzero"` // NVLink fabric (NVSwitch systems)

	// ResetRequired and DrainAndResetRecommended are "GPU Reset Status"
	// (R535-R570); RecoveryAction is "GPU Recovery Action" (R575+), e.g.
	// "None", "Reset", "Reboot", "Drain P2P", "Drain and Reset".
	ResetRequired            *bool  `json:"resetRequired,omitempty"`
	DrainAndResetRecommended *bool  `json:"drainAndResetRecommended,omitempty"`
	RecoveryAction           string `json:"recoveryAction,omitempty"`

	// DeviceErrors are values nvidia-smi printed instead of data that say
	// the device is unusable: "GPU requires reset", "GPU is lost".
	DeviceErrors []string `json:"deviceErrors,omitempty"`
}

// SMIMode is a current/pending pair (MIG mode, ECC mode).
type SMIMode struct {
	Current string `json:"current,omitempty"`
	Pending string `json:"pending,omitempty"`
}

// SMIMIGDevice is one MIG device (a compute instance in a GPU instance).
type SMIMIGDevice struct {
	Index             int    `json:"index"`
	GPUInstanceID     *int64 `json:"gpuInstanceID,omitempty"`
	ComputeInstanceID *int64 `json:"computeInstanceID,omitempty"`
	MemoryTotalMiB    *int64 `json:"memoryTotalMiB,omitempty"`
}

// SMIECC is the ECC error counters and flags.
type SMIECC struct {
	// Volatile counts since the driver loaded; Aggregate over the GPU's life.
	Volatile  SMIECCCounts `json:"volatile,omitzero"`
	Aggregate SMIECCCounts `json:"aggregate,omitzero"`
	// Newer drivers (R550+).
	SRAMThresholdExceeded *bool `json:"sramThresholdExceeded,omitempty"`
	ChannelRepairPending  *bool `json:"channelRepairPending,omitempty"`
	TPCRepairPending      *bool `json:"tpcRepairPending,omitempty"`
	UnrepairableMemory    *bool `json:"unrepairableMemory,omitempty"`
}

// SMIECCCounts are corrected/uncorrected totals, with the SRAM/DRAM split
// where the driver gives one. Totals are the sum of what is reported: of the
// SRAM and DRAM counts, of SRAM parity and SEC-DED counts, or of the
// per-location counts of the older single-bit/double-bit form when it has no
// total.
type SMIECCCounts struct {
	Corrected       *int64 `json:"corrected,omitempty"`
	Uncorrected     *int64 `json:"uncorrected,omitempty"`
	SRAMCorrected   *int64 `json:"sramCorrected,omitempty"`
	SRAMUncorrected *int64 `json:"sramUncorrected,omitempty"`
	DRAMCorrected   *int64 `json:"dramCorrected,omitempty"`
	DRAMUncorrected *int64 `json:"dramUncorrected,omitempty"`
}

// SMIRetiredPages is dynamic page retirement (pre-Ampere data-center GPUs).
type SMIRetiredPages struct {
	SingleBit *int64 `json:"singleBit,omitempty"` // multiple single-bit retirement
	DoubleBit *int64 `json:"doubleBit,omitempty"`
	// PendingRetirement and PendingBlacklist both say pages wait for a
	// reboot/reset to be retired (XML has both; text has "Pending Page
	// Blacklist").
	PendingRetirement *bool `json:"pendingRetirement,omitempty"`
	PendingBlacklist  *bool `json:"pendingBlacklist,omitempty"`
}

// SMIRemappedRows is row remapping (Ampere and later).
type SMIRemappedRows struct {
	Correctable   *int64 `json:"correctable,omitempty"`
	Uncorrectable *int64 `json:"uncorrectable,omitempty"`
	Pending       *bool  `json:"pending,omitempty"`
	Failure       *bool  `json:"failure,omitempty"`
}

// SMIFabric is the NVLink fabric state ("Not Started", "In Progress",
// "Completed") and status ("Success" or an error).
type SMIFabric struct {
	State  string `json:"state,omitempty"`
	Status string `json:"status,omitempty"`
}

// smiNode is one element (XML) or one line with its indented block (text).
// Both parsers build this tree and smiExtract reads it, so the two forms
// give the same result; text keys are normalised to the XML spelling
// ("FB Memory Usage" -> fb_memory_usage) and the lookups below name both
// spellings where they differ.
type smiNode struct {
	name  string // normalised: lower case, [a-z0-9_]
	key   string // as written
	id    string // XML id attribute
	value string // trimmed text
	kids  []*smiNode
}

// smiMaxDepth bounds nesting; real output is about 6 deep.
const smiMaxDepth = 64

func smiNormalize(key string) string {
	var b strings.Builder
	under := false
	for _, r := range strings.ToLower(key) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if under && b.Len() > 0 {
				b.WriteByte('_')
			}
			under = false
			b.WriteRune(r)
		} else {
			under = true
		}
	}
	return b.String()
}

// child is the first child named any of names, earlier names first.
func (n *smiNode) child(names ...string) *smiNode {
	if n == nil {
		return nil
	}
	for _, name := range names {
		for _, k := range n.kids {
			if k.name == name {
				return k
			}
		}
	}
	return nil
}

// find is the shallowest descendant named any of names, earlier names first.
func (n *smiNode) find(names ...string) *smiNode {
	if n == nil {
		return nil
	}
	for _, name := range names {
		level := n.kids
		for depth := 0; len(level) > 0 && depth < smiMaxDepth; depth++ {
			var next []*smiNode
			for _, k := range level {
				if k.name == name {
					return k
				}
				next = append(next, k.kids...)
			}
			level = next
		}
	}
	return nil
}

// preorder is every descendant of n in document order.
func (n *smiNode) preorder() []*smiNode {
	var out []*smiNode
	if n == nil {
		return out
	}
	stack := make([]*smiNode, 0, len(n.kids))
	for i := len(n.kids) - 1; i >= 0; i-- {
		stack = append(stack, n.kids[i])
	}
	for len(stack) > 0 {
		k := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		out = append(out, k)
		for i := len(k.kids) - 1; i >= 0; i-- {
			stack = append(stack, k.kids[i])
		}
	}
	return out
}

func (n *smiNode) str(names ...string) string { return smiClean(n.child(names...).val()) }

func (n *smiNode) val() string {
	if n == nil {
		return ""
	}
	return n.value
}

// smiUnreported are values (lower case, brackets removed) that mean "no data".
var smiUnreported = map[string]bool{
	"n/a": true, "na": true, "not supported": true, "unknown error": true, "unknown": true,
	"not available": true, "requested functionality has been deprecated": true,
	"insufficient permissions": true, "no permission": true, "not found": true,
	"gpu requires reset": true, "gpu is lost": true,
}

// smiDeviceErrors are unreported values that are themselves a health fact.
var smiDeviceErrors = map[string]string{
	"gpu requires reset": "GPU requires reset",
	"gpu is lost":        "GPU is lost",
}

// smiClean is v trimmed, or "" when it says "not reported".
func smiClean(v string) string {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && v[0] == '[' && v[len(v)-1] == ']' {
		v = strings.TrimSpace(v[1 : len(v)-1])
	}
	l := strings.ToLower(v)
	if smiUnreported[l] || strings.HasPrefix(l, "unknown error") || strings.HasPrefix(l, "not supported") {
		return ""
	}
	return v
}

// smiNumber reads the number at the start of v ("81559 MiB", "45 C",
// "300.00 W", "23%"), returning the number and the rest (the unit).
func smiNumber(v string) (float64, string, bool) {
	v = smiClean(v)
	if v == "" {
		return 0, "", false
	}
	end := 0
	for end < len(v) {
		c := v[end]
		if (c >= '0' && c <= '9') || c == '.' || ((c == '-' || c == '+') && end == 0) {
			end++
			continue
		}
		break
	}
	f, err := strconv.ParseFloat(v[:end], 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e15 {
		return 0, "", false
	}
	return f, strings.TrimSpace(v[end:]), true
}

func smiInt(v string) *int64 {
	f, _, ok := smiNumber(v)
	if !ok || f != math.Trunc(f) {
		return nil
	}
	i := int64(f)
	return &i
}

func smiFloat(v string) *float64 {
	f, _, ok := smiNumber(v)
	if !ok {
		return nil
	}
	return &f
}

// smiMiB reads a memory size in MiB (nvidia-smi prints MiB; GiB and KiB are
// converted in case a driver ever does).
func smiMiB(v string) *int64 {
	f, unit, ok := smiNumber(v)
	if !ok {
		return nil
	}
	switch strings.ToLower(unit) {
	case "gib", "gb":
		f *= 1024
	case "kib", "kb":
		f /= 1024
	}
	i := int64(math.Round(f))
	return &i
}

func smiBool(v string) *bool {
	var b bool
	switch strings.ToLower(smiClean(v)) {
	case "yes", "true":
		b = true
	case "no", "false":
		b = false
	default:
		return nil
	}
	return &b
}

func smiAdd(acc, v *int64) *int64 {
	if v == nil {
		return acc
	}
	if acc == nil {
		x := *v
		return &x
	}
	x := *acc + *v
	return &x
}

func smiFirst[T any](vs ...*T) *T {
	for _, v := range vs {
		if v != nil {
			return v
		}
	}
	return nil
}

// smiFirstToken is the first word of a cleaned value: "610.57.04
// [Deprecated; ...]" -> "610.57.04".
func smiFirstToken(v string) string {
	f := strings.Fields(smiClean(v))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// smiExtract reads the log's top level and its GPU nodes (with their bus ids
// from the <gpu id> attribute or the "GPU <bus id>" header).
func smiExtract(top *smiNode, gpus []*smiNode) *SMIQuery {
	q := &SMIQuery{
		DriverVersion: smiFirstToken(top.child("driver_version").val()),
		CUDAVersion:   smiFirstToken(top.child("cuda_version").val()),
	}
	if q.DriverVersion == "" { // R610 deprecates "Driver Version" for "KMD Version"
		q.DriverVersion = smiFirstToken(top.child("kmd_version").val())
	}
	if q.CUDAVersion == "" {
		q.CUDAVersion = smiFirstToken(top.child("cuda_umd_version").val())
	}
	if n := smiInt(top.child("attached_gpus").val()); n != nil && *n >= 0 && *n <= 1<<20 {
		q.AttachedGPUs = int(*n)
	}
	for _, g := range gpus {
		q.GPUs = append(q.GPUs, smiGPU(g))
	}
	return q
}

func smiGPU(n *smiNode) SMIGPU {
	g := SMIGPU{
		BusID:           smiClean(n.id),
		ProductName:     n.str("product_name"),
		Architecture:    n.str("product_architecture"),
		UUID:            n.str("uuid", "gpu_uuid"),
		Serial:          n.str("serial", "serial_number"),
		VBIOS:           n.str("vbios_version"),
		PersistenceMode: n.str("persistence_mode"),
		RecoveryAction:  n.str("gpu_recovery_action"),
	}
	if g.BusID == "" {
		g.BusID = n.child("pci").str("pci_bus_id", "bus_id")
	}
	g.DeviceID = n.child("pci").str("pci_device_id", "device_id")
	if m := n.child("mig_mode"); m != nil {
		g.MIGMode = SMIMode{Current: m.str("current_mig", "current"), Pending: m.str("pending_mig", "pending")}
	}
	g.MIGDevices = smiMIGDevices(n)

	fb := n.child("fb_memory_usage")
	g.MemoryTotalMiB = smiMiB(fb.child("total").val())
	g.MemoryUsedMiB = smiMiB(fb.child("used").val())

	t := n.child("temperature")
	g.TemperatureC = smiInt(t.child("gpu_temp", "gpu_current_temp").val())
	g.SlowdownTempC = smiInt(t.child("gpu_temp_slow_threshold", "gpu_slowdown_temp").val())
	g.TLimitC = smiInt(t.child("gpu_temp_tlimit", "gpu_t_limit_temp", "gpu_current_t_limit_temp").val())
	g.SlowdownTLimitC = smiInt(t.child("gpu_temp_slow_tlimit_threshold", "gpu_slowdown_t_limit_temp").val())
	g.MemoryTempC = smiInt(t.child("memory_temp", "memory_current_temp").val())
	g.MemoryMaxTempC = smiInt(t.child("gpu_temp_max_mem_threshold", "memory_max_operating_temp").val())

	// GPU power only: not "GPU Memory Power Readings" nor "Module Power
	// Readings". The limit may be nested ("GPU Ceiling Power Limit", R610).
	p := n.child("gpu_power_readings", "power_readings")
	g.PowerDrawW = smiFirst(
		smiFloat(p.child("power_draw").val()),
		smiFloat(p.child("average_power_draw").val()),
		smiFloat(p.child("instant_power_draw", "instantaneous_power_draw").val()))
	g.PowerLimitW = smiFirst(
		smiFloat(p.child("enforced_power_limit").val()),
		smiFloat(p.find("current_power_limit").val()),
		smiFloat(p.child("power_limit").val()))

	u := n.child("utilization")
	g.GPUUtilPercent = smiInt(u.child("gpu_util", "gpu").val())
	g.MemoryUtilPercent = smiInt(u.child("memory_util", "memory").val())

	if m := n.child("ecc_mode"); m != nil {
		g.ECCMode = SMIMode{Current: m.str("current_ecc", "current"), Pending: m.str("pending_ecc", "pending")}
	}
	e := n.child("ecc_errors")
	g.ECC = SMIECC{
		Volatile:              smiECCCounts(e.child("volatile")),
		Aggregate:             smiECCCounts(e.child("aggregate")),
		SRAMThresholdExceeded: smiBool(smiFirst(e.child("aggregate").child("sram_threshold_exceeded"), e.child("sram_threshold_exceeded")).val()),
		ChannelRepairPending:  smiBool(e.child("channel_repair_pending").val()),
		TPCRepairPending:      smiBool(e.child("tpc_repair_pending").val()),
		UnrepairableMemory:    smiBool(e.child("unrepairable_memory").val()),
	}

	r := n.child("retired_pages")
	g.RetiredPages = SMIRetiredPages{
		SingleBit: smiFirst(
			smiInt(r.child("multiple_single_bit_retirement").child("retired_count").val()),
			smiInt(r.child("single_bit_ecc").val())),
		DoubleBit: smiFirst(
			smiInt(r.child("double_bit_retirement").child("retired_count").val()),
			smiInt(r.child("double_bit_ecc").val())),
		PendingRetirement: smiBool(r.child("pending_retirement", "pending").val()),
		PendingBlacklist:  smiBool(r.child("pending_blacklist", "pending_page_blacklist").val()),
	}

	rr := n.child("remapped_rows")
	g.RemappedRows = SMIRemappedRows{
		Correctable:   smiInt(rr.child("remapped_row_corr", "correctable_error").val()),
		Uncorrectable: smiInt(rr.child("remapped_row_unc", "uncorrectable_error").val()),
		Pending:       smiBool(rr.child("remapped_row_pending", "pending").val()),
		Failure:       smiBool(rr.child("remapped_row_failure", "remapping_failure_occurred").val()),
	}

	g.ClockSlowdowns, g.ClockEvents = smiClockReasons(n.child("clocks_event_reasons", "clocks_throttle_reasons"))

	if f := n.child("fabric"); f != nil {
		g.Fabric = SMIFabric{State: f.str("state"), Status: f.str("status")}
	}
	rs := n.child("gpu_reset_status")
	g.ResetRequired = smiBool(rs.child("reset_required").val())
	g.DrainAndResetRecommended = smiBool(rs.child("drain_and_reset_recommended").val())

	seen := map[string]bool{}
	for _, k := range n.preorder() {
		if k.name == "xid" {
			if x := smiInt(k.value); x != nil && *x >= 0 && *x <= math.MaxInt32 {
				g.XIDs = append(g.XIDs, int(*x))
			}
		}
		v := strings.ToLower(strings.Trim(strings.TrimSpace(k.value), "[]"))
		if e, ok := smiDeviceErrors[v]; ok && !seen[e] {
			seen[e] = true
			g.DeviceErrors = append(g.DeviceErrors, e)
		}
	}
	return g
}

func smiMIGDevices(n *smiNode) []SMIMIGDevice {
	var nodes []*smiNode
	for _, k := range n.kids {
		switch k.name {
		case "mig_device": // R590 text: directly under the GPU
			nodes = append(nodes, k)
		case "mig_devices": // XML, older text
			for _, kk := range k.kids {
				if kk.name == "mig_device" {
					nodes = append(nodes, kk)
				}
			}
		}
	}
	var out []SMIMIGDevice
	for i, m := range nodes {
		d := SMIMIGDevice{
			Index:             i,
			GPUInstanceID:     smiInt(m.child("gpu_instance_id").val()),
			ComputeInstanceID: smiInt(m.child("compute_instance_id").val()),
			MemoryTotalMiB:    smiMiB(m.child("fb_memory_usage", "shared_fb_memory_usage").child("total").val()),
		}
		if x := smiInt(m.child("index").val()); x != nil && *x >= 0 && *x <= math.MaxInt32 {
			d.Index = int(*x)
		}
		out = append(out, d)
	}
	return out
}

// smiECCCounts reads a <volatile>/<aggregate> block (or its text form).
func smiECCCounts(n *smiNode) SMIECCCounts {
	var c SMIECCCounts
	if n == nil {
		return c
	}
	var sramUnc, sramUncParts, legacyCorr, legacyUnc *int64
	for _, k := range n.kids {
		switch {
		case k.name == "sram_correctable":
			c.SRAMCorrected = smiAdd(c.SRAMCorrected, smiInt(k.value))
		case k.name == "sram_uncorrectable":
			sramUnc = smiAdd(sramUnc, smiInt(k.value))
		case strings.HasPrefix(k.name, "sram_uncorrectable_"): // _parity, _secded / _sec_ded
			sramUncParts = smiAdd(sramUncParts, smiInt(k.value))
		case k.name == "dram_correctable":
			c.DRAMCorrected = smiAdd(c.DRAMCorrected, smiInt(k.value))
		case k.name == "dram_uncorrectable":
			c.DRAMUncorrected = smiAdd(c.DRAMUncorrected, smiInt(k.value))
		case k.name == "single_bit":
			legacyCorr = smiLocationTotal(k)
		case k.name == "double_bit":
			legacyUnc = smiLocationTotal(k)
		}
	}
	c.SRAMUncorrected = smiFirst(sramUnc, sramUncParts)
	c.Corrected = smiFirst(smiAdd(smiAdd(nil, c.SRAMCorrected), c.DRAMCorrected), legacyCorr)
	c.Uncorrected = smiFirst(smiAdd(smiAdd(nil, c.SRAMUncorrected), c.DRAMUncorrected), legacyUnc)
	return c
}

// smiLocationTotal is the <total> of a pre-R450 single_bit/double_bit block
// (device_memory, register_file, l1_cache, ...), or the sum of its
// locations where it has none.
func smiLocationTotal(n *smiNode) *int64 {
	if t := smiInt(n.child("total").val()); t != nil {
		return t
	}
	var sum *int64
	for _, k := range n.kids {
		sum = smiAdd(sum, smiInt(k.value))
	}
	return sum
}

// smiSlowdownReasons are the clocks event reasons that mean trouble.
var smiSlowdownReasons = map[string]bool{
	"hw_slowdown": true, "hw_thermal_slowdown": true, "hw_power_brake_slowdown": true, "sw_thermal_slowdown": true,
}

// smiReasonNames maps text spellings to the XML ones.
var smiReasonNames = map[string]string{
	"idle":                  "gpu_idle",
	"display_clock_setting": "display_clocks_setting",
}

func smiClockReasons(sec *smiNode) (slowdowns, events []string) {
	seen := map[string]bool{}
	// Text nests "HW Thermal Slowdown" under "HW Slowdown": all descendants.
	for _, k := range sec.preorder() {
		if !strings.EqualFold(smiClean(k.value), "active") {
			continue
		}
		name := strings.TrimPrefix(strings.TrimPrefix(k.name, "clocks_throttle_reason_"), "clocks_event_reason_")
		if alias, ok := smiReasonNames[name]; ok {
			name = alias
		}
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		if smiSlowdownReasons[name] {
			slowdowns = append(slowdowns, name)
		} else {
			events = append(events, name)
		}
	}
	return slowdowns, events
}
