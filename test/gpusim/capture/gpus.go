package capture

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// GPU is one GPU of a capture as the PCI bus shows it.
type GPU struct {
	Index int
	Name  string
	UUID  string
	// BusID is nvidia-smi's form, 00000000:18:00.0.
	BusID string
	// DeviceID and SubsystemID are nvidia-smi's 0xDDDDVVVV (device, then
	// vendor), e.g. 0x233010DE for an H100 SXM5.
	DeviceID, SubsystemID uint32
	// Class is the PCI class code: 0x030200 (3D controller) or 0x030000 (VGA).
	Class uint32
}

// PCIAddress is the sysfs name of the GPU's PCI function, 0000:18:00.0.
func (g GPU) PCIAddress() string {
	a := strings.ToLower(g.BusID)
	if i := strings.Index(a, ":"); i > 4 { // nvidia-smi pads the domain to 8 digits
		a = a[i-4:]
	}
	return a
}

// Device is the PCI device id (0x2330); 0 when the report hid it.
func (g GPU) Device() uint16 { return uint16(g.DeviceID >> 16) }

// GPUs are the capture's GPUs: from the --query-gpu recording, else the
// -q report, else the -q -x one.
func (c Capture) GPUs() ([]GPU, error) {
	if raw, err := c.Raw(KindQueryGPU); err == nil {
		if g, err := gpusFromCSV(raw); err == nil && len(g) > 0 {
			return g, nil
		}
	}
	for _, kind := range []string{KindQuery, KindQueryXML} {
		if raw, err := c.Raw(kind); err == nil {
			if g := gpusFromReport(string(raw), kind == KindQueryXML); len(g) > 0 {
				return g, nil
			}
		}
	}
	return nil, fmt.Errorf("gpusim: capture %s: no GPU with a PCI bus id in its recordings", c.Prefix)
}

func hex32(s string) (uint32, bool) {
	s = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(s), "0x"), "0X")
	v, err := strconv.ParseUint(s, 16, 32)
	return uint32(v), err == nil
}

func classOf(name, brand string, base, sub uint32) uint32 {
	if base != 0 {
		return base<<16 | sub<<8
	}
	if strings.Contains(name, "GeForce") || strings.Contains(name, "TITAN") || brand == "GeForce" || brand == "Titan" {
		return 0x030000
	}
	return 0x030200
}

func gpusFromCSV(raw []byte) ([]GPU, error) {
	header, rows, err := readCSV(raw)
	if err != nil {
		return nil, err
	}
	col := map[string]int{}
	for i, h := range header {
		name, _, _ := strings.Cut(h, " [")
		col[name] = i
	}
	get := func(rec []string, f string) string {
		if i, ok := col[f]; ok {
			return rec[i]
		}
		return ""
	}
	var out []GPU
	for i, rec := range rows {
		dev, ok := hex32(get(rec, "pci.device_id"))
		bus := get(rec, "pci.bus_id")
		if !ok || bus == "" {
			return nil, fmt.Errorf("row %d: no pci.bus_id or pci.device_id", i)
		}
		g := GPU{Index: i, Name: get(rec, "name"), UUID: get(rec, "uuid"), BusID: bus, DeviceID: dev}
		if idx, err := strconv.Atoi(get(rec, "index")); err == nil {
			g.Index = idx
		}
		g.SubsystemID, _ = hex32(get(rec, "pci.sub_device_id"))
		base, _ := hex32(get(rec, "pci.baseClass"))
		sub, _ := hex32(get(rec, "pci.subClass"))
		g.Class = classOf(g.Name, "", base, sub)
		out = append(out, g)
	}
	return out, nil
}

var (
	qGPU   = regexp.MustCompile(`(?m)^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$`)
	qField = func(name string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^\s*` + regexp.QuoteMeta(name) + `\s*:\s*(.*?)\s*$`)
	}
	xGPU = regexp.MustCompile(`<gpu id="([^"]+)">`)
	xTag = func(tag string) *regexp.Regexp { return regexp.MustCompile(`<` + tag + `>([^<]*)</` + tag + `>`) }
)

// gpusFromReport reads `nvidia-smi -q` (one "GPU <bus id>" section a GPU)
// or `-q -x` (one <gpu id="bus id">). A GPU whose report hides its PCI
// device id (some shared reports print [REDACTED]) keeps DeviceID 0: the
// simulators then know it by its name alone.
func gpusFromReport(report string, xml bool) []GPU {
	var out []GPU
	for i, s := range sections(report, xml) {
		field := func(x, text string) string {
			if xml {
				return s.get(x)
			}
			return s.get(text)
		}
		g := GPU{Index: i, Name: field("product_name", "Product Name"), UUID: field("uuid", "GPU UUID"), BusID: s.bus}
		g.DeviceID, _ = hex32(field("pci_device_id", "Device Id"))
		g.SubsystemID, _ = hex32(field("pci_sub_system_id", "Sub System Id"))
		g.Class = classOf(g.Name, field("product_brand", "Product Brand"), 0, 0)
		out = append(out, g)
	}
	return out
}

// RecordedDriver is the driver version the capture was recorded with, from
// its contents (the file name may name only the branch, "drv450").
func (c Capture) RecordedDriver() string {
	if raw, err := c.Raw(KindQueryGPU); err == nil {
		if header, rows, err := readCSV(raw); err == nil && len(rows) > 0 {
			for i, h := range header {
				if h == "driver_version" && rows[0][i] != "" {
					return rows[0][i]
				}
			}
		}
	}
	if raw, err := c.Raw(KindQuery); err == nil {
		if m := regexp.MustCompile(`(?m)^Driver Version\s*:\s*([0-9][0-9.]*)`).FindSubmatch(raw); m != nil {
			return string(m[1])
		}
	}
	if raw, err := c.Raw(KindQueryXML); err == nil {
		if m := xTag("driver_version").FindSubmatch(raw); m != nil {
			return strings.TrimSpace(string(m[1]))
		}
	}
	if raw, err := c.Raw(KindTable); err == nil {
		if m := regexp.MustCompile(`(?:Driver|KMD) Version:\s*([0-9][0-9.]*)`).FindSubmatch(raw); m != nil {
			return string(m[1])
		}
	}
	return c.Driver()
}
