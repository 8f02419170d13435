package facts

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// ParseSMIQuery reads nvidia-smi's full report in either form: `-q -x`
// (XML, what nvidia/verify asks for) or `-q` (text, where the XML form is
// missing or broken).
func ParseSMIQuery(data []byte) (*SMIQuery, error) {
	if t := bytes.TrimLeft(data, " \t\r\n\ufeff"); len(t) > 0 && t[0] == '<' {
		return ParseSMIQueryXML(data)
	}
	return ParseSMIQueryText(data)
}

// ParseSMIQueryXML reads `nvidia-smi -q -x` (any nvsmi_device DTD version;
// the DOCTYPE is ignored). Unknown elements are ignored, missing ones and
// N/A values leave fields unreported; input that is not a complete
// <nvidia_smi_log> document is an error.
func ParseSMIQueryXML(data []byte) (*SMIQuery, error) {
	root, err := smiXMLTree(data)
	if err != nil {
		return nil, fmt.Errorf("nvidia-smi -q -x output: %w", err)
	}
	if root.name != "nvidia_smi_log" {
		return nil, fmt.Errorf("nvidia-smi -q -x output: root element is <%s>, want <nvidia_smi_log>", root.key)
	}
	var gpus []*smiNode
	for _, k := range root.kids {
		if k.name == "gpu" {
			gpus = append(gpus, k)
		}
	}
	return smiExtract(root, gpus), nil
}

func smiXMLTree(data []byte) (*smiNode, error) {
	d := xml.NewDecoder(bytes.NewReader(smiSanitize(data)))
	// nvidia-smi says UTF-8 or nothing; read any declared charset as is.
	d.CharsetReader = func(_ string, r io.Reader) (io.Reader, error) { return r, nil }
	d.Entity = xml.HTMLEntity
	var root *smiNode
	var stack []*smiNode
	var text [][]byte // character data of each open element
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if root != nil && len(stack) == 0 {
				return nil, fmt.Errorf("second root element <%s>", t.Name.Local)
			}
			if len(stack) >= smiMaxDepth {
				return nil, fmt.Errorf("elements nested over %d deep", smiMaxDepth)
			}
			n := &smiNode{key: t.Name.Local, name: smiNormalize(t.Name.Local)}
			for _, a := range t.Attr {
				if a.Name.Local == "id" {
					n.id = strings.TrimSpace(a.Value)
				}
			}
			if len(stack) == 0 {
				root = n
			} else {
				p := stack[len(stack)-1]
				p.kids = append(p.kids, n)
			}
			stack = append(stack, n)
			text = append(text, nil)
		case xml.EndElement:
			if len(stack) == 0 { // the decoder checks nesting; be safe anyway
				return nil, fmt.Errorf("unexpected </%s>", t.Name.Local)
			}
			stack[len(stack)-1].value = strings.TrimSpace(string(text[len(text)-1]))
			stack = stack[:len(stack)-1]
			text = text[:len(text)-1]
		case xml.CharData:
			if len(text) > 0 {
				text[len(text)-1] = append(text[len(text)-1], t...)
			}
		}
		// Comments, processing instructions and the DOCTYPE directive are
		// not data.
	}
	if root == nil {
		return nil, errors.New("no XML element")
	}
	if len(stack) != 0 {
		return nil, fmt.Errorf("truncated: <%s> not closed", stack[len(stack)-1].key)
	}
	return root, nil
}

// smiSanitize makes bytes nvidia-smi copies verbatim (process names) safe
// for the XML decoder: invalid UTF-8 and control characters become U+FFFD.
func smiSanitize(data []byte) []byte {
	clean := utf8.Valid(data)
	if clean {
		for _, c := range data {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
				clean = false
				break
			}
		}
	}
	if clean {
		return data
	}
	data = bytes.ToValidUTF8(data, []byte("\uFFFD"))
	return bytes.Map(func(r rune) rune {
		if r < 0x20 && r != '\t' && r != '\n' && r != '\r' {
			return '\uFFFD'
		}
		return r
	}, data)
}
