package facts

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
)

// ParseSMIQueryText reads `nvidia-smi -q`: the "==============NVSMI
// LOG==============" report of indented "Key : Value" lines and section
// headers. Keys are matched by name, not column (the Processes block uses a
// narrower column), sections by indentation. Output that is not such a
// report (an error message such as "No devices were found", XML, garbage)
// is an error, as is a report without a GPU section (cut off before it).
func ParseSMIQueryText(data []byte) (*SMIQuery, error) {
	root, banner, err := smiTextTree(data)
	if err != nil {
		return nil, fmt.Errorf("nvidia-smi -q output: %w", err)
	}
	var gpus []*smiNode
	for _, k := range root.kids {
		if bus, ok := smiGPUHeader(k); ok {
			k.id = bus
			gpus = append(gpus, k)
		}
	}
	if !banner && root.child("driver_version", "kmd_version") == nil && len(gpus) == 0 {
		return nil, fmt.Errorf("nvidia-smi -q output: not an NVSMI LOG report: %q", smiFirstLine(data))
	}
	if len(gpus) == 0 {
		// nvidia-smi prints "No devices were found" rather than a report
		// without GPUs: this one was cut short.
		return nil, errors.New("nvidia-smi -q output: no GPU section (truncated?)")
	}
	return smiExtract(root, gpus), nil
}

// smiGPUHeader recognises the top-level "GPU 00000000:01:00.0" line.
func smiGPUHeader(n *smiNode) (string, bool) {
	if n.value != "" || len(n.kids) == 0 || len(n.key) < 5 || !strings.EqualFold(n.key[:4], "GPU ") {
		return "", false
	}
	bus := strings.TrimSpace(n.key[4:])
	if !strings.Contains(bus, ":") || strings.ContainsAny(bus, " \t") {
		return "", false
	}
	return bus, true
}

func smiTextTree(data []byte) (root *smiNode, banner bool, err error) {
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, false, errors.New("binary data (NUL bytes)")
	}
	type frame struct {
		indent int
		n      *smiNode
	}
	root = &smiNode{}
	stack := []frame{{-1, root}}
	for _, line := range strings.Split(string(bytes.ToValidUTF8(data, []byte("\uFFFD"))), "\n") {
		line = strings.TrimRight(line, " \t\r")
		body := strings.TrimLeft(line, " \t")
		if body == "" {
			continue
		}
		if strings.HasPrefix(body, "====") {
			if strings.Contains(body, "NVSMI LOG") {
				banner = true
			}
			continue
		}
		indent := 0
		for _, c := range line[:len(line)-len(body)] {
			if c == '\t' {
				indent += 8
			} else {
				indent++
			}
		}
		key, value := smiSplitLine(body)
		n := &smiNode{key: key, name: smiNormalize(key), value: value}
		for stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		p := stack[len(stack)-1].n
		p.kids = append(p.kids, n)
		if len(stack) > smiMaxDepth {
			return nil, false, fmt.Errorf("sections nested over %d deep", smiMaxDepth)
		}
		stack = append(stack, frame{indent, n})
	}
	return root, banner, nil
}

// smiSplitLine splits "Key    : Value" at the first colon that follows a
// blank and is followed by a blank or the end; values may contain colons
// ("Bus Id : 00000000:01:00.0") and headers have none ("GPU 00000000:01:00.0").
func smiSplitLine(body string) (key, value string) {
	blank := func(c byte) bool { return c == ' ' || c == '\t' }
	for i := 1; i < len(body); i++ {
		if body[i] == ':' && blank(body[i-1]) && (i+1 == len(body) || blank(body[i+1])) {
			return strings.TrimSpace(body[:i]), strings.TrimSpace(body[i+1:])
		}
	}
	return strings.TrimSpace(body), ""
}

func smiFirstLine(data []byte) string {
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 120 {
				l = l[:120] + "..."
			}
			return l
		}
	}
	return ""
}
