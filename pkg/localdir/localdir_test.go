package localdir

import (
	"errors"
	"testing"
)

func TestDir(t *testing.T) {
	noHome := func() (string, error) { return "", errors.New("$HOME is not defined") }
	home := func() (string, error) { return "/home/ops", nil }
	for _, tc := range []struct {
		name string
		home func() (string, error)
		euid int
		want string
	}{
		{"a home", home, 1000, "/home/ops/.gpukit/logs"},
		{"root's home", func() (string, error) { return "/root", nil }, 0, "/root/.gpukit/logs"},
		{"root without a home", noHome, 0, "/var/lib/gpukit/logs"},
		{"a user without a home: the working directory, not /tmp", noHome, 1000, ".gpukit/logs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := dir("logs", tc.home, func() int { return tc.euid }); got != tc.want {
				t.Errorf("dir = %s, want %s", got, tc.want)
			}
		})
	}
}
