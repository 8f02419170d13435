//go:build !unix

package ssh

import "os"

// lockFile is a no-op where flock does not exist; concurrent accept-new
// writers from several processes are then not serialised.
func lockFile(*os.File) error { return nil }

func unlockFile(*os.File) error { return nil }
