package ansible

import "testing"

func TestSanitizeName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"gpu01":       "gpu01",
		"GPU_01":      "gpu-01",
		"rack 3/node": "rack-3-node",
		"-edge-":      "edge",
		"a..b":        "a.b",
		"___":         "host",
	} {
		if got := sanitizeName(in); got != want {
			t.Errorf("sanitizeName(%q) = %q, want %q", in, got, want)
		}
	}
	long := ""
	for range 70 {
		long += "a"
	}
	if got := sanitizeName(long); len(got) != 63 {
		t.Errorf("a 70-character label became %d characters", len(got))
	}
}

func TestIsAddress(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]bool{
		"10.0.0.1":          true,
		"fd00::1":           true,
		"gpu01":             true,
		"GPU01.example.com": true,
		"gpu_01":            false,
		"10.0.1.300":        false,
		"-bad":              false,
		"":                  false,
	} {
		if got := isAddress(in); got != want {
			t.Errorf("isAddress(%q) = %v, want %v", in, got, want)
		}
	}
}
