package facts

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gpukit/gpukit/test/fixtures"
	"github.com/gpukit/gpukit/test/golden"
	"github.com/gpukit/gpukit/test/gpusim/capture"
)

// smiCaptureFiles is every -q -x and -q capture in the fixtures folder.
func smiCaptureFiles(t testing.TB) (xmls, texts []string) {
	t.Helper()
	dir := fixtures.Dir(t, "nvidia-smi")
	var err error
	if xmls, err = filepath.Glob(filepath.Join(dir, "*__q-x.xml")); err != nil {
		t.Fatal(err)
	}
	for _, pat := range []string{"*__q.txt", "*__q-*.txt"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, m...)
	}
	sort.Strings(texts)
	if len(xmls) == 0 || len(texts) == 0 {
		t.Fatalf("fixtures %s: %d q-x.xml and %d q*.txt captures, want some of each", dir, len(xmls), len(texts))
	}
	return xmls, texts
}

var smiDriverInName = regexp.MustCompile(`__drv([0-9.]+)__`)

// Every capture parses, matches its golden rendering (reviewed against the
// capture by eye) and says the driver version its file name says.
func TestSMIQueryCapturesGolden(t *testing.T) {
	xmls, texts := smiCaptureFiles(t)
	for _, path := range append(xmls, texts...) {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			q, err := ParseSMIQuery(data)
			if err != nil {
				t.Fatal(err)
			}
			if len(q.GPUs) == 0 {
				t.Fatal("no GPUs parsed")
			}
			if m := smiDriverInName.FindStringSubmatch(name); m == nil || q.DriverVersion != m[1] {
				t.Errorf("driver version %q, file name says %v", q.DriverVersion, m)
			}
			for i, g := range q.GPUs {
				if g.BusID == "" || g.ProductName == "" || !strings.HasPrefix(g.UUID, "GPU-") ||
					g.MemoryTotalMiB == nil || *g.MemoryTotalMiB < 4000 || g.TemperatureC == nil ||
					g.PowerDrawW == nil || g.PowerLimitW == nil || g.PersistenceMode == "" {
					t.Errorf("GPU %d lacks facts every capture has: %+v", i, g)
				}
			}
			golden.AssertString(t, filepath.Join("testdata", "smiq", name+".golden"), renderSMIQuery(q))
		})
	}
}

// Key facts of each capture, read off the captures by hand.
func TestSMIQueryCaptureFacts(t *testing.T) {
	dir := fixtures.Dir(t, "nvidia-smi")
	type want struct {
		cuda, product, arch, persistence, migCurrent string
		attached, gpus                               int
		migGI                                        []int64
		migMiB                                       []int64
		memMiB                                       int64
		eccMode                                      string // current ECC mode
		volUncorrected                               *int64 // nil: not reported
		remapReported, retiredReported               bool
		events                                       []string
		status                                       string
	}
	zero := int64(0)
	cases := map[string]want{
		"a100-sxm4-80gb-mig__drv535.54.03__q-x.xml": {cuda: "12.2", product: "NVIDIA A100-SXM4-80GB", arch: "Ampere",
			persistence: "Disabled", migCurrent: "Enabled", attached: 4, gpus: 1,
			migGI: []int64{3, 4, 5, 6}, migMiB: []int64{19968, 19968, 19968, 19968}, memMiB: 81920,
			eccMode: "Enabled", volUncorrected: &zero, status: HealthWarn},
		"rtx-3090__drv525.147.05__q-x.xml": {cuda: "12.0", product: "NVIDIA GeForce RTX 3090", arch: "Ampere",
			persistence: "Enabled", attached: 1, gpus: 1, memMiB: 24576, events: []string{"gpu_idle"}, status: HealthOK},
		"tesla-t4__drv515.105.01__q-x.xml": {cuda: "11.7", product: "Tesla T4", arch: "Turing",
			persistence: "Disabled", attached: 1, gpus: 1, memMiB: 15360, eccMode: "Enabled", volUncorrected: &zero,
			retiredReported: true, status: HealthWarn},
		"h100-80gb-hbm3__drv590.48.01__q-idle.txt": {cuda: "13.1", product: "NVIDIA H100 80GB HBM3", arch: "Hopper",
			persistence: "Enabled", migCurrent: "Disabled", attached: 1, gpus: 1, memMiB: 81559, eccMode: "Enabled",
			volUncorrected: &zero, remapReported: true, events: []string{"gpu_idle"}, status: HealthOK},
		"h100-80gb-hbm3-mig__drv590.48.01__q-idle.txt": {cuda: "13.1", product: "NVIDIA H100 80GB HBM3", arch: "Hopper",
			persistence: "Enabled", migCurrent: "Enabled", attached: 1, gpus: 1,
			migGI: []int64{2, 3, 9, 10}, migMiB: []int64{40448, 20096, 9984, 9984}, memMiB: 81559,
			eccMode: "Enabled", volUncorrected: &zero, events: []string{"gpu_idle"}, status: HealthOK},
		"l40s__drv595.80__q-idle.txt": {cuda: "13.2", product: "NVIDIA L40S", arch: "Ada Lovelace",
			persistence: "Disabled", attached: 1, gpus: 1, memMiB: 46068, eccMode: "Enabled", volUncorrected: &zero,
			remapReported: true, status: HealthWarn},
		"rtx-2080-super__drv610.57.04__q-idle.txt": {cuda: "13.3", product: "NVIDIA GeForce RTX 2080 SUPER", arch: "Turing",
			persistence: "Disabled", attached: 1, gpus: 1, memMiB: 8192, events: []string{"gpu_idle"}, status: HealthWarn},
		"rtx-4080-super__drv595.71.05__q-idle.txt": {cuda: "13.2", product: "NVIDIA GeForce RTX 4080 SUPER", arch: "Ada Lovelace",
			persistence: "Disabled", attached: 1, gpus: 1, memMiB: 16376, events: []string{"gpu_idle"}, status: HealthWarn},
	}
	xmls, texts := smiCaptureFiles(t)
	for _, path := range append(xmls, texts...) {
		if _, ok := cases[filepath.Base(path)]; !ok {
			t.Errorf("capture %s has no key facts in this test: add them", filepath.Base(path))
		}
	}
	for name, w := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(dir, name)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			q, err := ParseSMIQuery(data)
			if err != nil {
				t.Fatal(err)
			}
			if q.CUDAVersion != w.cuda || q.AttachedGPUs != w.attached || len(q.GPUs) != w.gpus {
				t.Fatalf("cuda %q attached %d gpus %d, want %q %d %d", q.CUDAVersion, q.AttachedGPUs, len(q.GPUs), w.cuda, w.attached, w.gpus)
			}
			g := q.GPUs[0]
			if g.ProductName != w.product || g.Architecture != w.arch || g.PersistenceMode != w.persistence ||
				g.MIGMode.Current != w.migCurrent || g.ECCMode.Current != w.eccMode {
				t.Errorf("identity/modes %q %q persistence %q mig %q ecc %q", g.ProductName, g.Architecture, g.PersistenceMode, g.MIGMode.Current, g.ECCMode.Current)
			}
			if *g.MemoryTotalMiB != w.memMiB {
				t.Errorf("memory %d MiB, want %d", *g.MemoryTotalMiB, w.memMiB)
			}
			var gi, mib []int64
			for _, d := range g.MIGDevices {
				gi = append(gi, *d.GPUInstanceID)
				mib = append(mib, *d.MemoryTotalMiB)
				if d.ComputeInstanceID == nil || *d.ComputeInstanceID != 0 {
					t.Errorf("MIG device %d compute instance %v", d.Index, d.ComputeInstanceID)
				}
			}
			if !reflect.DeepEqual(gi, w.migGI) || !reflect.DeepEqual(mib, w.migMiB) {
				t.Errorf("MIG devices GI %v MiB %v, want %v %v", gi, mib, w.migGI, w.migMiB)
			}
			if !reflect.DeepEqual(g.ECC.Volatile.Uncorrected, w.volUncorrected) {
				t.Errorf("volatile uncorrected %s, want %s", smiShow(g.ECC.Volatile.Uncorrected), smiShow(w.volUncorrected))
			}
			if (g.RemappedRows != SMIRemappedRows{}) != w.remapReported || (g.RetiredPages != SMIRetiredPages{}) != w.retiredReported {
				t.Errorf("remapped rows %+v retired pages %+v", g.RemappedRows, g.RetiredPages)
			}
			if !reflect.DeepEqual(g.ClockEvents, w.events) || len(g.ClockSlowdowns) != 0 {
				t.Errorf("clock events %v slowdowns %v, want %v", g.ClockEvents, g.ClockSlowdowns, w.events)
			}
			if h := g.Health(); h.Status() != w.status {
				t.Errorf("health %+v, want %s", h, w.status)
			}
			if w.status == HealthWarn { // persistence off is the one finding in these captures
				if h := g.Health(); len(h.Reasons()) != 1 || !strings.Contains(h.Reasons()[0], "persistence mode is off") {
					t.Errorf("health reasons %q", h.Reasons())
				}
			}
		})
	}
}

// The -q text captures were recorded with a --query-gpu CSV of the same
// GPU in the same session: the slow-changing facts must agree.
func TestSMIQueryTextAgreesWithQueryGPU(t *testing.T) {
	caps, err := capture.All(fixtures.Dir(t, "nvidia-smi"))
	if err != nil {
		t.Fatal(err)
	}
	fields := []string{"driver_version", "name", "uuid", "serial", "pci.bus_id", "persistence_mode", "vbios_version",
		"memory.total", "ecc.mode.current", "ecc.mode.pending", "mig.mode.current", "mig.mode.pending", "enforced.power.limit",
		"ecc.errors.corrected.volatile.total", "ecc.errors.uncorrected.volatile.total",
		"ecc.errors.corrected.aggregate.total", "ecc.errors.uncorrected.aggregate.total",
		"remapped_rows.correctable", "remapped_rows.uncorrectable", "remapped_rows.pending", "remapped_rows.failure",
		"retired_pages.single_bit_ecc.count", "retired_pages.double_bit.count"}
	compared := 0
	for _, c := range caps {
		text, err := c.Query()
		if err != nil {
			continue // no -q recording for this GPU
		}
		t.Run(filepath.Base(c.Prefix), func(t *testing.T) {
			q, err := ParseSMIQueryText(text)
			if err != nil {
				t.Fatal(err)
			}
			row, err := c.QueryGPU(fields, "csv,noheader")
			if err != nil {
				t.Fatal(err)
			}
			vals := strings.Split(strings.TrimSpace(row), ", ")
			if len(vals) != len(fields) || len(q.GPUs) != 1 {
				t.Fatalf("row %q, %d GPUs", row, len(q.GPUs))
			}
			g := q.GPUs[0]
			str := func(p *int64) string { return smiShow(p) }
			b := func(p *bool) string {
				if p == nil {
					return "n/a"
				}
				return map[bool]string{true: "Yes", false: "No"}[*p]
			}
			got := []string{q.DriverVersion, g.ProductName, g.UUID, g.Serial, g.BusID, g.PersistenceMode, g.VBIOS,
				str(g.MemoryTotalMiB), g.ECCMode.Current, g.ECCMode.Pending, g.MIGMode.Current, g.MIGMode.Pending,
				fmt.Sprintf("%.2f", *g.PowerLimitW),
				str(g.ECC.Volatile.Corrected), str(g.ECC.Volatile.Uncorrected),
				str(g.ECC.Aggregate.Corrected), str(g.ECC.Aggregate.Uncorrected),
				str(g.RemappedRows.Correctable), str(g.RemappedRows.Uncorrectable), b(g.RemappedRows.Pending), b(g.RemappedRows.Failure),
				str(g.RetiredPages.SingleBit), str(g.RetiredPages.DoubleBit)}
			for i, f := range fields {
				want := strings.TrimSpace(vals[i])
				switch want { // what --query-gpu prints for a value it does not report
				case "[N/A]", "[Not Supported]", "[Unknown Error]", "":
					want = "n/a"
				}
				if strings.HasSuffix(want, " MiB") || strings.HasSuffix(want, " W") {
					want = strings.Fields(want)[0]
				}
				g := got[i]
				if g == "" {
					g = "n/a"
				}
				if g != want {
					t.Errorf("%s: -q says %q, --query-gpu says %q", f, g, want)
				}
			}
		})
		compared++
	}
	if compared == 0 {
		t.Fatal("no capture has both -q and --query-gpu recordings")
	}
}

// The same facts written as -q -x and as -q give the same result: two GPUs,
// renamed elements (clocks_event_reasons / clocks_throttle_reasons), the
// pre-R450 single_bit/double_bit ECC form with and without totals, N/A and
// [Not Supported] values, and unknown elements.
func TestSMIQueryTextAndXMLAgree(t *testing.T) {
	x, err := ParseSMIQueryXML([]byte(smiPairXML))
	if err != nil {
		t.Fatal(err)
	}
	txt, err := ParseSMIQueryText([]byte(smiPairText))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(x, txt) {
		t.Fatalf("XML and text differ:\nXML:\n%s\ntext:\n%s", renderSMIQuery(x), renderSMIQuery(txt))
	}
	golden.AssertString(t, filepath.Join("testdata", "smiq", "synthetic-pair.golden"), renderSMIQuery(x))

	if x.DriverVersion != "535.104.05" || x.AttachedGPUs != 2 || len(x.GPUs) != 2 {
		t.Fatalf("%+v", x)
	}
	a, v := x.GPUs[0], x.GPUs[1]
	check := func(what string, got, want any) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	i := func(v int64) *int64 { return &v }
	yes, no := true, false
	check("A100 bus", a.BusID, "00000000:07:00.0")
	check("A100 volatile", a.ECC.Volatile, SMIECCCounts{Corrected: i(12), Uncorrected: i(1), SRAMCorrected: i(5), SRAMUncorrected: i(0), DRAMCorrected: i(7), DRAMUncorrected: i(1)})
	check("A100 aggregate SRAM parity+SEC-DED", a.ECC.Aggregate.SRAMUncorrected, i(3))
	check("A100 aggregate", a.ECC.Aggregate.Uncorrected, i(7))
	check("A100 remap", a.RemappedRows, SMIRemappedRows{Correctable: i(3), Uncorrectable: i(1), Pending: &yes, Failure: &no})
	check("A100 slowdowns", a.ClockSlowdowns, []string{"hw_slowdown", "hw_thermal_slowdown"})
	check("A100 events", a.ClockEvents, []string{"sw_power_cap"})
	check("A100 power", []float64{*a.PowerDrawW, *a.PowerLimitW}, []float64{398.12, 400})
	check("V100 volatile legacy", v.ECC.Volatile, SMIECCCounts{Corrected: i(3), Uncorrected: i(0)})
	check("V100 aggregate legacy (summed locations)", v.ECC.Aggregate, SMIECCCounts{Corrected: i(42), Uncorrected: i(1)})
	check("V100 retired", v.RetiredPages, SMIRetiredPages{SingleBit: i(58), DoubleBit: i(2), PendingBlacklist: &yes})
	check("V100 power draw [Not Supported]", v.PowerDrawW, (*float64)(nil))
	check("V100 power limit (enforced: Unknown Error)", *v.PowerLimitW, 300.0)
	check("V100 slowdown threshold N/A", v.SlowdownTempC, (*int64)(nil))

	ha, hv := a.Health(), v.Health()
	check("A100 status", ha.Status(), HealthFail)
	check("V100 status", hv.Status(), HealthWarn)
	for _, want := range []string{"fail: 1 uncorrectable ECC error(s) since the driver loaded", "warn: 7 uncorrectable ECC error(s) over the GPU's lifetime",
		"row remapping pending", "draining and resetting", "hw_slowdown, hw_thermal_slowdown", "GPU at 91 C", "MIG mode change pending (current Disabled, pending Enabled)"} {
		if !smiReasonsContain(ha.Reasons(), want) {
			t.Errorf("A100 reasons lack %q: %q", want, ha.Reasons())
		}
	}
	for _, want := range []string{"1 uncorrectable ECC error(s) over the GPU's lifetime", "60 retired pages", "page retirement pending",
		"ECC mode change pending", "persistence mode is off"} {
		if !smiReasonsContain(hv.Reasons(), want) {
			t.Errorf("V100 reasons lack %q: %q", want, hv.Reasons())
		}
	}
	check("a GPU of the report fails", slices.ContainsFunc(x.Health(), func(h GPUHealth) bool { return h.Status() == HealthFail }), true)
}

func smiReasonsContain(reasons []string, s string) bool {
	for _, r := range reasons {
		if strings.Contains(r, s) {
			return true
		}
	}
	return false
}

func TestSMIQueryXMLTolerance(t *testing.T) {
	doc := func(gpus string) []byte {
		return []byte(`<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v99.dtd">
<nvidia_smi_log><driver_version>999.1</driver_version><attached_gpus>3</attached_gpus>` + gpus + `</nvidia_smi_log>`)
	}
	t.Run("unreported values", func(t *testing.T) {
		var b strings.Builder
		for _, v := range []string{"N/A", "[N/A]", "Not Supported", "[Not Supported]", "Unknown Error", "[Unknown Error]",
			"Requested functionality has been deprecated", "Insufficient Permissions", "", "  "} {
			fmt.Fprintf(&b, `<gpu id="%s"><product_name>%[1]s</product_name><persistence_mode>%[1]s</persistence_mode>
<mig_mode><current_mig>%[1]s</current_mig><pending_mig>Enabled</pending_mig></mig_mode>
<fb_memory_usage><total>%[1]s</total><used>%[1]s</used></fb_memory_usage>
<temperature><gpu_temp>%[1]s</gpu_temp><gpu_temp_slow_threshold>%[1]s</gpu_temp_slow_threshold></temperature>
<power_readings><power_draw>%[1]s</power_draw><power_limit>%[1]s</power_limit></power_readings>
<ecc_errors><volatile><sram_uncorrectable>%[1]s</sram_uncorrectable><dram_uncorrectable>%[1]s</dram_uncorrectable></volatile></ecc_errors>
<retired_pages><pending_retirement>%[1]s</pending_retirement></retired_pages>
<remapped_rows><remapped_row_failure>%[1]s</remapped_row_failure></remapped_rows>
<clocks_event_reasons><clocks_event_reason_hw_slowdown>%[1]s</clocks_event_reason_hw_slowdown></clocks_event_reasons>
<fabric><state>%[1]s</state></fabric><gpu_recovery_action>%[1]s</gpu_recovery_action></gpu>`, v)
		}
		q, err := ParseSMIQueryXML(doc(b.String()))
		if err != nil {
			t.Fatal(err)
		}
		if len(q.GPUs) != 10 || q.AttachedGPUs != 3 {
			t.Fatalf("%d GPUs, attached %d", len(q.GPUs), q.AttachedGPUs)
		}
		for _, g := range q.GPUs {
			want := SMIGPU{BusID: g.BusID, MIGMode: SMIMode{Pending: "Enabled"}}
			if !reflect.DeepEqual(g, want) {
				t.Errorf("%q: %+v", g.BusID, g)
			}
			if h := g.Health(); h.Status() != HealthOK || len(h.Reasons()) != 0 {
				t.Errorf("%q: unreported values gave health %+v", g.BusID, h)
			}
		}
	})
	t.Run("units", func(t *testing.T) {
		q, err := ParseSMIQueryXML(doc(`<gpu id="a"><fb_memory_usage><total>81559 MiB</total><used>2 GiB</used></fb_memory_usage>
<temperature><gpu_temp>45 C</gpu_temp><gpu_temp_tlimit>-3 C</gpu_temp_tlimit><gpu_temp_slow_tlimit_threshold>-2 C</gpu_temp_slow_tlimit_threshold></temperature>
<gpu_power_readings><average_power_draw>NaN W</average_power_draw><instant_power_draw>300.50 W</instant_power_draw>
<current_power_limit>700.00 W</current_power_limit></gpu_power_readings>
<module_power_readings><power_draw>9999.00 W</power_draw></module_power_readings>
<utilization><gpu_util>23%</gpu_util><memory_util>1.5 %</memory_util></utilization></gpu>`))
		if err != nil {
			t.Fatal(err)
		}
		g := q.GPUs[0]
		got := fmt.Sprint(*g.MemoryTotalMiB, *g.MemoryUsedMiB, *g.TemperatureC, *g.TLimitC, *g.PowerDrawW, *g.PowerLimitW, *g.GPUUtilPercent, g.MemoryUtilPercent == nil)
		if got != "81559 2048 45 -3 300.5 700 23 true" {
			t.Errorf("got %s", got)
		}
		if h := g.Health(); h.Status() != HealthWarn || !smiReasonsContain(h.Reasons(), "from T.Limit") {
			t.Errorf("T.Limit margin past slowdown: %+v", h)
		}
	})
	t.Run("missing sections and unknown elements", func(t *testing.T) {
		q, err := ParseSMIQueryXML(doc(`<future_top>1</future_top><gpu id="b"><product_name>X</product_name>
<future_section><product_name>not this</product_name><xid_like>1</xid_like></future_section>
<ecc_errors><volatile><future_counter>9</future_counter></volatile></ecc_errors>
<remapped_rows>N/A</remapped_rows><mig_devices>None</mig_devices></gpu><gpu/>`))
		if err != nil {
			t.Fatal(err)
		}
		if len(q.GPUs) != 2 || q.GPUs[0].ProductName != "X" || !reflect.DeepEqual(q.GPUs[1], SMIGPU{}) ||
			q.GPUs[0].ECC != (SMIECC{}) || q.GPUs[0].MIGDevices != nil {
			t.Errorf("%+v", q.GPUs)
		}
	})
	t.Run("throttle and event reason names", func(t *testing.T) {
		for _, sec := range []string{"clocks_throttle_reasons", "clocks_event_reasons"} {
			p := strings.TrimSuffix(sec, "s") + "_"
			q, err := ParseSMIQueryXML(doc(fmt.Sprintf(`<gpu id="c"><%[1]s><%[2]sgpu_idle>Active</%[2]sgpu_idle>
<%[2]ssw_power_cap>Active</%[2]ssw_power_cap><%[2]shw_power_brake_slowdown>Active</%[2]shw_power_brake_slowdown>
<%[2]ssw_thermal_slowdown>Active</%[2]ssw_thermal_slowdown><%[2]sfuture_reason>Active</%[2]sfuture_reason>
<%[2]shw_slowdown>Not Active</%[2]shw_slowdown></%[1]s>
<clocks_event_reasons_counters><clocks_event_reasons_counters_sw_power_cap>5 us</clocks_event_reasons_counters_sw_power_cap></clocks_event_reasons_counters></gpu>`, sec, p)))
			if err != nil {
				t.Fatal(err)
			}
			g := q.GPUs[0]
			if !reflect.DeepEqual(g.ClockSlowdowns, []string{"hw_power_brake_slowdown", "sw_thermal_slowdown"}) ||
				!reflect.DeepEqual(g.ClockEvents, []string{"gpu_idle", "sw_power_cap", "future_reason"}) {
				t.Errorf("%s: slowdowns %v events %v", sec, g.ClockSlowdowns, g.ClockEvents)
			}
		}
	})
	t.Run("device errors, xid, reset status, fabric", func(t *testing.T) {
		q, err := ParseSMIQueryXML(doc(`<gpu id="d"><fb_memory_usage><total>[GPU requires reset]</total></fb_memory_usage>
<xid_events><xid>79</xid><xid>N/A</xid></xid_events><gpu_reset_status><reset_required>Yes</reset_required>
<drain_and_reset_recommended>Requested functionality has been deprecated</drain_and_reset_recommended></gpu_reset_status>
<gpu_recovery_action>Drain and Reset</gpu_recovery_action><fabric><state>Completed</state><status>Failure</status></fabric></gpu>`))
		if err != nil {
			t.Fatal(err)
		}
		g := q.GPUs[0]
		if g.MemoryTotalMiB != nil || !reflect.DeepEqual(g.DeviceErrors, []string{"GPU requires reset"}) ||
			!reflect.DeepEqual(g.XIDs, []int{79}) || g.ResetRequired == nil || !*g.ResetRequired ||
			g.DrainAndResetRecommended != nil || g.RecoveryAction != "Drain and Reset" || g.Fabric != (SMIFabric{"Completed", "Failure"}) {
			t.Errorf("%+v", g)
		}
		h := g.Health()
		for _, want := range []string{`"GPU requires reset"`, "XID 79", "needs a reset", `recovery action "Drain and Reset"`, "fabric registration failed (Failure)"} {
			if !smiReasonsContain(h.Reasons(), want) {
				t.Errorf("reasons lack %q: %q", want, h.Reasons())
			}
		}
		if h.Status() != HealthFail || !strings.HasPrefix(h.Reasons()[0], "fail: ") {
			t.Errorf("%+v", h)
		}
	})
	t.Run("empty log and odd prolog", func(t *testing.T) {
		q, err := ParseSMIQueryXML([]byte(`<?xml version="1.0" encoding="ISO-8859-1"?><!-- c --><nvidia_smi_log/>`))
		if err != nil || len(q.GPUs) != 0 {
			t.Fatalf("%+v %v", q, err)
		}
		q, err = ParseSMIQueryXML([]byte("<nvidia_smi_log><gpu id=\"e\"><product_name>bad \xff\x01 bytes &amp;&nbsp;entity</product_name></gpu></nvidia_smi_log>"))
		if err != nil || q.GPUs[0].ProductName != "bad \uFFFD\uFFFD bytes &\u00a0entity" {
			t.Fatalf("%+v %v", q, err)
		}
	})
}

func TestSMIQueryTextTolerance(t *testing.T) {
	t.Run("unreported values, columns, tabs, CRLF", func(t *testing.T) {
		in := "\r\n==============NVSMI LOG==============\r\n\r\nDriver Version : 999.1\r\nAttached GPUs : 2\r\n" +
			"GPU 00000000:01:00.0\r\n    Product Name : [N/A]\r\n    Persistence Mode              : Not Supported\r\n" +
			"    Temperature\r\n        GPU Current Temp : Unknown Error\r\n        GPU Slowdown Temp : [Not Supported]\r\n" +
			"    Future Section\r\n        Deeper\r\n            Key : 1\r\n" +
			"GPU 00000000:02:00.0\n\tProduct Name\t: Tabbed GPU\n\tFB Memory Usage\n\t\tTotal : 1024 MiB\n"
		q, err := ParseSMIQueryText([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if len(q.GPUs) != 2 || !reflect.DeepEqual(q.GPUs[0], SMIGPU{BusID: "00000000:01:00.0"}) ||
			q.GPUs[1].ProductName != "Tabbed GPU" || *q.GPUs[1].MemoryTotalMiB != 1024 {
			t.Errorf("%+v", q.GPUs)
		}
	})
	t.Run("R450-style MIG Devices block", func(t *testing.T) {
		in := `Driver Version                            : 450.80.02
Attached GPUs                             : 1
GPU 00000000:36:00.0
    MIG Mode
        Current                           : Enabled
        Pending                           : Enabled
    MIG Devices
        MIG Device
            Index                         : 0
            GPU Instance ID               : 1
            Compute Instance ID           : 0
            FB Memory Usage
                Total                     : 4864 MiB
        MIG Device
            Index                         : 1
            GPU Instance ID               : 2
            Compute Instance ID           : 0
            FB Memory Usage
                Total                     : 4864 MiB
`
		q, err := ParseSMIQueryText([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		d := q.GPUs[0].MIGDevices
		if len(d) != 2 || d[1].Index != 1 || *d[1].GPUInstanceID != 2 || *d[1].MemoryTotalMiB != 4864 {
			t.Errorf("%+v", d)
		}
	})
}

// Input that is not nvidia-smi output, or is cut short, is an error: never
// a panic, never a half-empty result passed off as data.
func TestSMIQueryInvalidInput(t *testing.T) {
	for _, in := range []string{"", "   \n", "hello", "{}", "<html><body/></html>", "<nvidia_smi_log><gpu>",
		"<nvidia_smi_log></nvidia_smi_log><second/>", "<a></b>", "No devices were found",
		"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.",
		"Failed to initialize NVML: Driver/library version mismatch", "\x00\x01\x02\xff", strings.Repeat("<a>", 100) + strings.Repeat("</a>", 100),
	} {
		if q, err := ParseSMIQueryXML([]byte(in)); err == nil {
			t.Errorf("XML %q: no error, %+v", in, q)
		}
		if q, err := ParseSMIQueryText([]byte(in)); err == nil {
			t.Errorf("text %q: no error, %+v", in, q)
		}
	}
	// Nesting is bounded inside a real report too.
	deepXML := "<nvidia_smi_log><gpu id=\"00000000:17:00.0\">" + strings.Repeat("<a>", 100) + strings.Repeat("</a>", 100) + "</gpu></nvidia_smi_log>"
	if _, err := ParseSMIQueryXML([]byte(deepXML)); err == nil || !strings.Contains(err.Error(), "nested over") {
		t.Errorf("XML nested 100 deep in a GPU: %v", err)
	}
	var deepText strings.Builder
	deepText.WriteString("==============NVSMI LOG==============\n\nDriver Version : 580.95.05\nAttached GPUs : 1\nGPU 00000000:17:00.0\n")
	for d := 1; d <= 100; d++ {
		fmt.Fprintf(&deepText, "%sLevel %d\n", strings.Repeat(" ", 4*d), d)
	}
	if _, err := ParseSMIQueryText([]byte(deepText.String())); err == nil || !strings.Contains(err.Error(), "nested over") {
		t.Errorf("text nested 100 deep in a GPU: %v", err)
	}
	xmls, texts := smiCaptureFiles(t)
	for _, path := range xmls {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseSMIQueryText(data); err == nil {
			t.Errorf("%s: the text parser took XML", filepath.Base(path))
		}
		end := strings.LastIndex(string(data), "</nvidia_smi_log>")
		for cut := 0; cut < end+len("</nvidia_smi_log>"); cut += 37 {
			if _, err := ParseSMIQueryXML(data[:cut]); err == nil {
				t.Errorf("%s cut at %d: no error", filepath.Base(path), cut)
				break
			}
		}
	}
	for _, path := range texts {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ParseSMIQueryXML(data); err == nil {
			t.Errorf("%s: the XML parser took text", filepath.Base(path))
		}
		gpu := regexp.MustCompile(`(?m)^GPU [0-9A-Fa-f]`).FindIndex(data)
		if gpu == nil {
			t.Fatalf("%s: no GPU header", filepath.Base(path))
		}
		for cut := 0; cut <= gpu[0]; cut += 11 {
			if _, err := ParseSMIQueryText(data[:cut]); err == nil {
				t.Errorf("%s cut at %d, before the first GPU: no error", filepath.Base(path), cut)
				break
			}
		}
		for cut := gpu[0]; cut < len(data); cut += 53 { // cut inside a GPU: whatever is there, no panic
			if q, err := ParseSMIQueryText(data[:cut]); err == nil {
				_ = q.Health()
			}
		}
	}
}

func TestSMIGPUHealthRules(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	yes, no := true, false
	cases := []struct {
		name   string
		g      SMIGPU
		status string
		reason string // substring of the one reason
	}{
		{"nothing reported", SMIGPU{}, HealthOK, ""},
		{"all clean", SMIGPU{PersistenceMode: "Enabled", MIGMode: SMIMode{"Enabled", "Enabled"},
			ECC:          SMIECC{Volatile: SMIECCCounts{Uncorrected: i(0)}, Aggregate: SMIECCCounts{Uncorrected: i(0)}},
			RemappedRows: SMIRemappedRows{Correctable: i(5), Uncorrectable: i(0), Pending: &no, Failure: &no},
			RetiredPages: SMIRetiredPages{SingleBit: i(59), DoubleBit: i(0), PendingRetirement: &no},
			ClockEvents:  []string{"gpu_idle", "sw_power_cap", "applications_clocks_setting"}, TemperatureC: i(88), SlowdownTempC: i(89),
			Fabric: SMIFabric{"Completed", "Success"}, RecoveryAction: "None"}, HealthOK, ""},
		{"volatile uncorrectable", SMIGPU{ECC: SMIECC{Volatile: SMIECCCounts{Uncorrected: i(2)}, Aggregate: SMIECCCounts{Uncorrected: i(2)}}}, HealthFail, "2 uncorrectable ECC error(s) since the driver loaded"},
		{"aggregate uncorrectable", SMIGPU{ECC: SMIECC{Volatile: SMIECCCounts{Uncorrected: i(0)}, Aggregate: SMIECCCounts{Uncorrected: i(3)}}}, HealthWarn, "3 uncorrectable ECC error(s) over the GPU's lifetime"},
		{"unrepairable memory", SMIGPU{ECC: SMIECC{UnrepairableMemory: &yes}}, HealthFail, "RMA"},
		{"SRAM threshold", SMIGPU{ECC: SMIECC{SRAMThresholdExceeded: &yes}}, HealthWarn, "SRAM"},
		{"channel repair", SMIGPU{ECC: SMIECC{ChannelRepairPending: &yes}}, HealthWarn, "channel repair pending"},
		{"remap failure", SMIGPU{RemappedRows: SMIRemappedRows{Failure: &yes}}, HealthFail, "row remapping failed: RMA"},
		{"remap pending", SMIGPU{RemappedRows: SMIRemappedRows{Pending: &yes}}, HealthWarn, "reset the GPU"},
		{"retirement pending", SMIGPU{RetiredPages: SMIRetiredPages{PendingBlacklist: &yes}}, HealthWarn, "page retirement pending"},
		{"retired pages at threshold", SMIGPU{RetiredPages: SMIRetiredPages{SingleBit: i(50), DoubleBit: i(10)}}, HealthWarn, "60 retired pages"},
		{"retired pages, one count", SMIGPU{RetiredPages: SMIRetiredPages{DoubleBit: i(61)}}, HealthWarn, "single-bit n/a, double-bit 61"},
		{"thermal slowdown", SMIGPU{ClockSlowdowns: []string{"sw_thermal_slowdown"}}, HealthWarn, "sw_thermal_slowdown"},
		{"hot", SMIGPU{TemperatureC: i(89), SlowdownTempC: i(89)}, HealthWarn, "GPU at 89 C"},
		{"hot, threshold unknown", SMIGPU{TemperatureC: i(120)}, HealthOK, ""},
		{"hot memory", SMIGPU{MemoryTempC: i(96), MemoryMaxTempC: i(95)}, HealthWarn, "memory at 96 C"},
		{"MIG pending", SMIGPU{MIGMode: SMIMode{"Enabled", "Disabled"}}, HealthWarn, "MIG mode change pending"},
		{"MIG pending unknown", SMIGPU{MIGMode: SMIMode{Current: "Enabled"}}, HealthOK, ""},
		{"ECC pending", SMIGPU{ECCMode: SMIMode{"Disabled", "Enabled"}}, HealthWarn, "ECC mode change pending"},
		{"persistence off", SMIGPU{PersistenceMode: "Disabled"}, HealthWarn, "persistence mode is off"},
		{"fabric in progress", SMIGPU{Fabric: SMIFabric{State: "In Progress"}}, HealthWarn, "fabric in progress"},
		{"fabric failed", SMIGPU{Fabric: SMIFabric{"Completed", "Failure"}}, HealthFail, "fabric registration failed"},
		{"reset required", SMIGPU{ResetRequired: &yes, DrainAndResetRecommended: &no}, HealthWarn, "needs a reset"},
		{"recovery action", SMIGPU{RecoveryAction: "Reboot"}, HealthWarn, `"Reboot"`},
		{"GPU lost", SMIGPU{DeviceErrors: []string{"GPU is lost"}}, HealthFail, "GPU is lost"},
		{"XID", SMIGPU{XIDs: []int{48}}, HealthWarn, "XID 48"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := c.g.Health()
			if h.Status() != c.status {
				t.Errorf("status %s, want %s (%q)", h.Status(), c.status, h.Reasons())
			}
			if c.reason == "" {
				if len(h.Reasons()) != 0 {
					t.Errorf("reasons %q, want none", h.Reasons())
				}
			} else if len(h.Reasons()) != 1 || !strings.Contains(h.Reasons()[0], c.reason) || !strings.HasPrefix(h.Reasons()[0], c.status+": ") {
				t.Errorf("reasons %q, want one %s reason with %q", h.Reasons(), c.status, c.reason)
			}
		})
	}
	if (*SMIQuery)(nil).Health() != nil || (GPUHealth{}).Status() != HealthOK {
		t.Error("empty health")
	}
}

// FuzzParseSMIQuery: neither parser panics, and what they accept renders,
// judges and marshals. Run it with
//
//	go test ./pkg/facts -run '^$' -fuzz FuzzParseSMIQuery -fuzztime 60s -fuzzminimizetime 5s
//
// (the default one-minute minimisation of the 60 KB capture seeds stalls
// progress for most of a short run).
func FuzzParseSMIQuery(f *testing.F) {
	f.Add([]byte(smiPairXML))
	f.Add([]byte(smiPairText))
	f.Add([]byte("<nvidia_smi_log><gpu id=\"x\"><ecc_errors><volatile><single_bit><total>1</total></single_bit></volatile></ecc_errors></gpu></nvidia_smi_log>"))
	xmls, texts := smiCaptureFiles(f)
	for _, path := range append(xmls, texts...) {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, parse := range []func([]byte) (*SMIQuery, error){ParseSMIQueryXML, ParseSMIQueryText} {
			q, err := parse(data)
			if err != nil {
				if q != nil {
					t.Fatal("result with an error")
				}
				continue
			}
			_ = renderSMIQuery(q)
			_ = q.Health()
			if _, err := json.Marshal(q); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// renderSMIQuery is a compact, stable rendering for golden files: "-" is
// "not reported".
func renderSMIQuery(q *SMIQuery) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	s := func(v string) string {
		if v == "" {
			return "-"
		}
		return v
	}
	n := func(v *int64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprint(*v)
	}
	fl := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%.2f", *v)
	}
	bo := func(v *bool) string {
		if v == nil {
			return "-"
		}
		if *v {
			return "yes"
		}
		return "no"
	}
	l := func(v []string) string {
		if len(v) == 0 {
			return "-"
		}
		return strings.Join(v, ", ")
	}
	ecc := func(c SMIECCCounts) string {
		return fmt.Sprintf("corrected %s uncorrected %s (sram %s/%s dram %s/%s)", n(c.Corrected), n(c.Uncorrected),
			n(c.SRAMCorrected), n(c.SRAMUncorrected), n(c.DRAMCorrected), n(c.DRAMUncorrected))
	}
	w("driver %s  cuda %s  attached %d  listed %d", s(q.DriverVersion), s(q.CUDAVersion), q.AttachedGPUs, len(q.GPUs))
	for i, g := range q.GPUs {
		w("gpu %d %s", i, s(g.BusID))
		w("  product         %s (%s)", s(g.ProductName), s(g.Architecture))
		w("  uuid            %s", s(g.UUID))
		w("  serial          %s  vbios %s", s(g.Serial), s(g.VBIOS))
		w("  persistence     %s", s(g.PersistenceMode))
		w("  mig mode        current %s  pending %s", s(g.MIGMode.Current), s(g.MIGMode.Pending))
		for _, d := range g.MIGDevices {
			w("  mig device %d    gi %s  ci %s  memory %s MiB", d.Index, n(d.GPUInstanceID), n(d.ComputeInstanceID), n(d.MemoryTotalMiB))
		}
		w("  memory          total %s MiB  used %s MiB", n(g.MemoryTotalMiB), n(g.MemoryUsedMiB))
		w("  temperature     gpu %s C  slowdown %s C  t.limit %s C  slowdown t.limit %s C  memory %s C  memory max %s C",
			n(g.TemperatureC), n(g.SlowdownTempC), n(g.TLimitC), n(g.SlowdownTLimitC), n(g.MemoryTempC), n(g.MemoryMaxTempC))
		w("  power           draw %s W  limit %s W", fl(g.PowerDrawW), fl(g.PowerLimitW))
		w("  utilization     gpu %s %%  memory %s %%", n(g.GPUUtilPercent), n(g.MemoryUtilPercent))
		w("  ecc mode        current %s  pending %s", s(g.ECCMode.Current), s(g.ECCMode.Pending))
		w("  ecc volatile    %s", ecc(g.ECC.Volatile))
		w("  ecc aggregate   %s", ecc(g.ECC.Aggregate))
		w("  ecc flags       sram threshold exceeded %s  channel repair pending %s  tpc repair pending %s  unrepairable memory %s",
			bo(g.ECC.SRAMThresholdExceeded), bo(g.ECC.ChannelRepairPending), bo(g.ECC.TPCRepairPending), bo(g.ECC.UnrepairableMemory))
		r := g.RetiredPages
		w("  retired pages   single-bit %s  double-bit %s  pending retirement %s  pending blacklist %s",
			n(r.SingleBit), n(r.DoubleBit), bo(r.PendingRetirement), bo(r.PendingBlacklist))
		rr := g.RemappedRows
		w("  remapped rows   correctable %s  uncorrectable %s  pending %s  failure %s",
			n(rr.Correctable), n(rr.Uncorrectable), bo(rr.Pending), bo(rr.Failure))
		w("  clock slowdowns %s", l(g.ClockSlowdowns))
		w("  clock events    %s", l(g.ClockEvents))
		var xids []string
		for _, x := range g.XIDs {
			xids = append(xids, fmt.Sprint(x))
		}
		w("  xids            %s", l(xids))
		w("  fabric          state %s  status %s", s(g.Fabric.State), s(g.Fabric.Status))
		w("  reset           required %s  drain and reset %s  recovery action %s",
			bo(g.ResetRequired), bo(g.DrainAndResetRecommended), s(g.RecoveryAction))
		w("  device errors   %s", l(g.DeviceErrors))
		h := g.Health()
		w("  health          %s", h.Status())
		for _, r := range h.Reasons() {
			w("    %s", r)
		}
	}
	return b.String()
}

// smiPairXML and smiPairText are the same two GPUs as -q -x and as -q.
const smiPairXML = `<?xml version="1.0" ?>
<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">
<nvidia_smi_log>
	<timestamp>Mon Jan  1 00:00:00 2024</timestamp>
	<driver_version>535.104.05</driver_version>
	<cuda_version>12.2</cuda_version>
	<attached_gpus>2</attached_gpus>
	<gpu id="00000000:07:00.0">
		<product_name>NVIDIA A100-SXM4-40GB</product_name>
		<product_architecture>Ampere</product_architecture>
		<persistence_mode>Enabled</persistence_mode>
		<mig_mode>
			<current_mig>Disabled</current_mig>
			<pending_mig>Enabled</pending_mig>
		</mig_mode>
		<mig_devices>
			None
		</mig_devices>
		<serial>1234567890123</serial>
		<uuid>GPU-11111111-2222-3333-4444-555555555555</uuid>
		<vbios_version>92.00.19.00.10</vbios_version>
		<gpu_reset_status>
			<reset_required>No</reset_required>
			<drain_and_reset_recommended>Yes</drain_and_reset_recommended>
		</gpu_reset_status>
		<some_future_block>
			<some_future_field>42</some_future_field>
		</some_future_block>
		<clocks_event_reasons>
			<clocks_event_reason_gpu_idle>Not Active</clocks_event_reason_gpu_idle>
			<clocks_event_reason_sw_power_cap>Active</clocks_event_reason_sw_power_cap>
			<clocks_event_reason_hw_slowdown>Active</clocks_event_reason_hw_slowdown>
			<clocks_event_reason_hw_thermal_slowdown>Active</clocks_event_reason_hw_thermal_slowdown>
			<clocks_event_reason_hw_power_brake_slowdown>Not Active</clocks_event_reason_hw_power_brake_slowdown>
		</clocks_event_reasons>
		<fb_memory_usage>
			<total>40960 MiB</total>
			<used>1024 MiB</used>
		</fb_memory_usage>
		<utilization>
			<gpu_util>87 %</gpu_util>
			<memory_util>12 %</memory_util>
		</utilization>
		<ecc_mode>
			<current_ecc>Enabled</current_ecc>
			<pending_ecc>Enabled</pending_ecc>
		</ecc_mode>
		<ecc_errors>
			<volatile>
				<sram_correctable>5</sram_correctable>
				<sram_uncorrectable>0</sram_uncorrectable>
				<dram_correctable>7</dram_correctable>
				<dram_uncorrectable>1</dram_uncorrectable>
			</volatile>
			<aggregate>
				<sram_correctable>10</sram_correctable>
				<sram_uncorrectable_parity>1</sram_uncorrectable_parity>
				<sram_uncorrectable_secded>2</sram_uncorrectable_secded>
				<dram_correctable>30</dram_correctable>
				<dram_uncorrectable>4</dram_uncorrectable>
				<sram_threshold_exceeded>No</sram_threshold_exceeded>
			</aggregate>
			<aggregate_uncorrectable_sram_sources>
				<sram_l2>3</sram_l2>
			</aggregate_uncorrectable_sram_sources>
			<channel_repair_pending>No</channel_repair_pending>
		</ecc_errors>
		<retired_pages>
			<multiple_single_bit_retirement>
				<retired_count>N/A</retired_count>
				<retired_pagelist>N/A</retired_pagelist>
			</multiple_single_bit_retirement>
			<pending_blacklist>N/A</pending_blacklist>
		</retired_pages>
		<remapped_rows>
			<remapped_row_corr>3</remapped_row_corr>
			<remapped_row_unc>1</remapped_row_unc>
			<remapped_row_pending>Yes</remapped_row_pending>
			<remapped_row_failure>No</remapped_row_failure>
		</remapped_rows>
		<temperature>
			<gpu_temp>91 C</gpu_temp>
			<gpu_temp_max_threshold>95 C</gpu_temp_max_threshold>
			<gpu_temp_slow_threshold>90 C</gpu_temp_slow_threshold>
			<memory_temp>70 C</memory_temp>
			<gpu_temp_max_mem_threshold>95 C</gpu_temp_max_mem_threshold>
		</temperature>
		<power_readings>
			<power_draw>398.12 W</power_draw>
			<power_limit>400.00 W</power_limit>
			<enforced_power_limit>400.00 W</enforced_power_limit>
		</power_readings>
		<fabric>
			<state>Completed</state>
			<status>Success</status>
		</fabric>
	</gpu>
	<gpu id="00000000:86:00.0">
		<product_name>Tesla V100-SXM2-16GB</product_name>
		<product_architecture>Volta</product_architecture>
		<persistence_mode>Disabled</persistence_mode>
		<mig_mode>
			<current_mig>N/A</current_mig>
			<pending_mig>N/A</pending_mig>
		</mig_mode>
		<uuid>GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee</uuid>
		<clocks_throttle_reasons>
			<clocks_throttle_reason_gpu_idle>Active</clocks_throttle_reason_gpu_idle>
			<clocks_throttle_reason_sw_thermal_slowdown>Not Active</clocks_throttle_reason_sw_thermal_slowdown>
		</clocks_throttle_reasons>
		<fb_memory_usage>
			<total>16160 MiB</total>
			<used>0 MiB</used>
		</fb_memory_usage>
		<ecc_mode>
			<current_ecc>Enabled</current_ecc>
			<pending_ecc>Disabled</pending_ecc>
		</ecc_mode>
		<ecc_errors>
			<volatile>
				<single_bit>
					<device_memory>2</device_memory>
					<register_file>1</register_file>
					<l1_cache>N/A</l1_cache>
					<total>3</total>
				</single_bit>
				<double_bit>
					<device_memory>0</device_memory>
					<register_file>0</register_file>
					<l1_cache>N/A</l1_cache>
				</double_bit>
			</volatile>
			<aggregate>
				<single_bit>
					<device_memory>40</device_memory>
					<l2_cache>2</l2_cache>
				</single_bit>
				<double_bit>
					<device_memory>1</device_memory>
					<total>1</total>
				</double_bit>
			</aggregate>
		</ecc_errors>
		<retired_pages>
			<multiple_single_bit_retirement>
				<retired_count>58</retired_count>
				<retired_pagelist>
					<retired_page_address>0x0000000000012345</retired_page_address>
				</retired_pagelist>
			</multiple_single_bit_retirement>
			<double_bit_retirement>
				<retired_count>2</retired_count>
			</double_bit_retirement>
			<pending_blacklist>Yes</pending_blacklist>
		</retired_pages>
		<remapped_rows>N/A</remapped_rows>
		<temperature>
			<gpu_temp>45 C</gpu_temp>
			<gpu_temp_slow_threshold>N/A</gpu_temp_slow_threshold>
		</temperature>
		<power_readings>
			<power_draw>[Not Supported]</power_draw>
			<power_limit>300.00 W</power_limit>
			<enforced_power_limit>Unknown Error</enforced_power_limit>
		</power_readings>
	</gpu>
</nvidia_smi_log>
`

const smiPairText = `
==============NVSMI LOG==============

Timestamp                                 : Mon Jan  1 00:00:00 2024
Driver Version                            : 535.104.05
CUDA Version                              : 12.2

Attached GPUs                             : 2
GPU 00000000:07:00.0
    Product Name                          : NVIDIA A100-SXM4-40GB
    Product Architecture                  : Ampere
    Persistence Mode                      : Enabled
    MIG Mode
        Current                           : Disabled
        Pending                           : Enabled
    MIG Devices                           : None
    Serial Number                         : 1234567890123
    GPU UUID                              : GPU-11111111-2222-3333-4444-555555555555
    VBIOS Version                         : 92.00.19.00.10
    GPU Reset Status
        Reset Required                    : No
        Drain and Reset Recommended       : Yes
    Some Future Block
        Some Future Field                 : 42
    Clocks Event Reasons
        Idle                              : Not Active
        SW Power Cap                      : Active
        HW Slowdown                       : Active
            HW Thermal Slowdown           : Active
            HW Power Brake Slowdown       : Not Active
    FB Memory Usage
        Total                             : 40960 MiB
        Used                              : 1024 MiB
    Utilization
        Gpu                               : 87 %
        Memory                            : 12 %
    ECC Mode
        Current                           : Enabled
        Pending                           : Enabled
    ECC Errors
        Volatile
            SRAM Correctable              : 5
            SRAM Uncorrectable            : 0
            DRAM Correctable              : 7
            DRAM Uncorrectable            : 1
        Aggregate
            SRAM Correctable              : 10
            SRAM Uncorrectable Parity     : 1
            SRAM Uncorrectable SEC-DED    : 2
            DRAM Correctable              : 30
            DRAM Uncorrectable            : 4
            SRAM Threshold Exceeded       : No
        Aggregate Uncorrectable SRAM Sources
            SRAM L2                       : 3
        Channel Repair Pending            : No
    Retired Pages
        Single Bit ECC                    : N/A
        Pending Page Blacklist            : N/A
    Remapped Rows
        Correctable Error                 : 3
        Uncorrectable Error               : 1
        Pending                           : Yes
        Remapping Failure Occurred        : No
    Temperature
        GPU Current Temp                  : 91 C
        GPU Shutdown Temp                 : 95 C
        GPU Slowdown Temp                 : 90 C
        Memory Current Temp               : 70 C
        Memory Max Operating Temp         : 95 C
    Power Readings
        Power Draw                        : 398.12 W
        Power Limit                       : 400.00 W
        Enforced Power Limit              : 400.00 W
    Fabric
        State                             : Completed
        Status                            : Success

GPU 00000000:86:00.0
    Product Name                          : Tesla V100-SXM2-16GB
    Product Architecture                  : Volta
    Persistence Mode                      : Disabled
    MIG Mode
        Current                           : N/A
        Pending                           : N/A
    GPU UUID                              : GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee
    Clocks Throttle Reasons
        Idle                              : Active
        SW Thermal Slowdown               : Not Active
    FB Memory Usage
        Total                             : 16160 MiB
        Used                              : 0 MiB
    ECC Mode
        Current                           : Enabled
        Pending                           : Disabled
    ECC Errors
        Volatile
            Single Bit
                Device Memory             : 2
                Register File             : 1
                L1 Cache                  : N/A
                Total                     : 3
            Double Bit
                Device Memory             : 0
                Register File             : 0
                L1 Cache                  : N/A
        Aggregate
            Single Bit
                Device Memory             : 40
                L2 Cache                  : 2
            Double Bit
                Device Memory             : 1
                Total                     : 1
    Retired Pages
        Single Bit ECC                    : 58
        Double Bit ECC                    : 2
        Pending Page Blacklist            : Yes
    Remapped Rows                         : N/A
    Temperature
        GPU Current Temp                  : 45 C
        GPU Slowdown Temp                 : N/A
    Power Readings
        Power Draw                        : [Not Supported]
        Power Limit                       : 300.00 W
        Enforced Power Limit              : Unknown Error
`
