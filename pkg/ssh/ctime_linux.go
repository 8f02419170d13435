package ssh

import (
	"os"
	"syscall"
	"time"
)

// changed is fi's status change time, which every write sets and no
// caller can set back (unlike the modification time: `cp -p`, touch).
func changed(fi os.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(int64(st.Ctim.Sec), int64(st.Ctim.Nsec)) //nolint:unconvert // int32 on 32-bit Linux
	}
	return fi.ModTime()
}
