package manifests

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
)

//go:embed values/*.yaml
var valuesFS embed.FS

// Values returns gpukit's base Helm values of the pinned chart called name
// (values/<name>.yaml): the static part of what gpukit sets, which the
// layers complete with what depends on the inventory and the inventory's
// own values then merge over. A fresh copy on every call, so the caller may
// change it; empty for a chart without a file. The files are part of the
// binary: a malformed one is a defect (TestValues reads every one) and
// panics.
func Values(name string) map[string]any {
	v, err := values(name)
	if err != nil {
		panic(err)
	}
	return v
}

func values(name string) (map[string]any, error) {
	b, err := valuesFS.ReadFile("values/" + name + ".yaml")
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]any{}, nil
	}
	if err != nil {
		return nil, err
	}
	v := map[string]any{}
	if err := decodeStrict(b, &v); err != nil {
		return nil, fmt.Errorf("manifests: values/%s.yaml: %w", name, err)
	}
	return v, nil
}

// ValuesFiles names the charts that have a values file.
func ValuesFiles() ([]string, error) {
	entries, err := valuesFS.ReadDir("values")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out, nil
}
