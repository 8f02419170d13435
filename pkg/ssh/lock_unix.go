//go:build unix

package ssh

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive advisory lock on f. flock locks belong to the
// open file description, so two goroutines of one process that opened the
// file separately exclude each other just like two processes do.
func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			return err
		}
	}
}

func unlockFile(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}
