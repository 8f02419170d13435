//go:build !linux

package ssh

import (
	"os"
	"time"
)

// changed is fi's modification time where gpukit reads no status change
// time.
func changed(fi os.FileInfo) time.Time { return fi.ModTime() }
