package lab

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// labScript is lab.sh: tests of any package run the lab without knowing where the source is.
//
//go:embed lab.sh
var labScript []byte

// installScript writes labScript to dir/bin/lab-<hash>.sh unless it is there already. A new
// version gets a new name and is written next to the file and renamed: a running lab.sh, and
// hosts that re-execute it, keep the version they started with.
func installScript(dir string) (string, error) {
	sum := sha256.Sum256(labScript)
	bin := filepath.Join(dir, "bin")
	p := filepath.Join(bin, "lab-"+hex.EncodeToString(sum[:6])+".sh")
	if b, err := os.ReadFile(p); err == nil && bytes.Equal(b, labScript) {
		return p, nil
	}
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return "", fmt.Errorf("installing lab.sh: %w", err)
	}
	f, err := os.CreateTemp(bin, ".lab-*.sh")
	if err != nil {
		return "", fmt.Errorf("installing lab.sh: %w", err)
	}
	_, err = f.Write(labScript)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o755)
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("installing lab.sh: %w", err)
	}
	pruneScripts(bin, p)
	return p, nil
}

// pruneScripts removes other versions written more than a day ago: a lab started by a test
// lives as long as that test.
func pruneScripts(bin, keep string) {
	old, _ := filepath.Glob(filepath.Join(bin, "lab-*.sh"))
	for _, p := range old {
		if st, err := os.Stat(p); err == nil && p != keep && time.Since(st.ModTime()) > 24*time.Hour {
			os.Remove(p)
		}
	}
}
