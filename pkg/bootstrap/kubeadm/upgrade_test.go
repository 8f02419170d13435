package kubeadm

import (
	"strings"
	"testing"
)

// A cluster moves a patch or a minor at a time, never back; a skipped
// minor names the releases to take in turn, from the bill of materials.
func TestCheckUpgrade(t *testing.T) {
	for _, tt := range []struct{ have, want, err string }{
		{"1.36.3", "1.37.2", ""},
		{"1.36.1", "1.36.3", ""},
		{"1.37.2", "1.37.2", ""},
		{"1.37.2", "1.36.3", "a downgrade"},
		{"1.37.2", "1.37.1", "a downgrade"},
		{"1.35.4", "1.37.2", "upgrade to 1.36.3, then 1.37.2 in turn (gpukit upgrade kubernetes --version 1.36.3 first)"},
		{"1.34.4", "1.37.2", "upgrade to 1.35.4, then 1.36.3, then 1.37.2"},
		{"1.36.10", "1.36.9", "a downgrade"},
	} {
		err := CheckUpgrade(tt.have, tt.want)
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s -> %s: %v", tt.have, tt.want, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s -> %s: %v, want %q", tt.have, tt.want, err, tt.err)
		}
	}
}
