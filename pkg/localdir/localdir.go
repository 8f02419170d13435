// Package localdir names where gpukit keeps what it writes on the machine it
// runs on (run logs, rollout states): under the user's home, never in a
// shared /tmp, where another user could have made the directory first, or
// planted a link in it.
package localdir

import (
	"os"
	"path/filepath"
)

// Dir is ~/.gpukit/sub; without a home, /var/lib/gpukit/sub for root and
// .gpukit/sub in the working directory for anyone else.
func Dir(sub string) string { return dir(sub, os.UserHomeDir, os.Geteuid) }

func dir(sub string, home func() (string, error), euid func() int) string {
	if h, err := home(); err == nil && h != "" {
		return filepath.Join(h, ".gpukit", sub)
	}
	if euid() == 0 {
		return filepath.Join("/var/lib/gpukit", sub)
	}
	return filepath.Join(".gpukit", sub)
}
