package ssh

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	"github.com/pkg/sftp"
)

// installScript moves an uploaded file into place atomically (install.sh).
//
//go:embed install.sh
var installScript string

// Upload places f on the host: SFTP (as the login user) into a fresh
// private directory under /tmp, then `install -m` and a rename into f.Path
// as root when f.Sudo is set (through sudo as Config.Sudo says).
// The file appears atomically; missing parent directories are created
// (0755); the file is owned by whoever installed it. Mode 0 means 0644.
func (c *Client) Upload(ctx context.Context, f File) error {
	name := "upload " + f.Path
	if !path.IsAbs(f.Path) || strings.HasSuffix(f.Path, "/") {
		return fmt.Errorf("%s: destination must be an absolute file path", name)
	}
	if f.Content == nil {
		return fmt.Errorf("%s: no content", name)
	}
	mode := f.Mode
	if mode == 0 {
		mode = 0o644
	}
	src, err := c.sendFile(ctx, f.Content)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	_, err = c.Run(ctx, Command{
		Name:   name,
		Script: installScript,
		Args:   []string{src, f.Path, octalMode(mode)},
		Sudo:   f.Sudo,
	})
	return err
}

// sendFile copies content over SFTP into a new 0700 directory in /tmp and
// returns the file's path. The SFTP session is closed before returning, so
// an Upload holds one session slot at a time.
func (c *Client) sendFile(ctx context.Context, content io.Reader) (string, error) {
	release, err := c.acquire(ctx)
	if err != nil {
		return "", err
	}
	defer release()
	sc, err := opened(ctx, c.done, func() (*sftp.Client, error) { return c.conn.NewSftp() }, func(sc *sftp.Client) { sc.Close() })
	if err != nil {
		return "", fmt.Errorf("start sftp: %w", c.lostCause(err))
	}
	defer sc.Close()
	stop := context.AfterFunc(ctx, func() { sc.Close() })
	defer stop()
	fail := func(err error) (string, error) {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		return "", c.lostCause(err)
	}

	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("random name: %w", err)
	}
	// A random name nobody can have prepared, made private before the data
	// goes in.
	dir := "/tmp/.gpukit-upload-" + hex.EncodeToString(b)
	if err := sc.Mkdir(dir); err != nil {
		return fail(fmt.Errorf("sftp mkdir %s: %w", dir, err))
	}
	if err := sc.Chmod(dir, 0o700); err != nil {
		sc.RemoveDirectory(dir) //nolint:errcheck // best effort
		return fail(fmt.Errorf("sftp chmod %s: %w", dir, err))
	}
	file := dir + "/data"
	w, err := sc.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL)
	if err == nil {
		_, err = w.ReadFrom(content)
		err = errors.Join(err, w.Close())
	}
	if err != nil {
		sc.Remove(file)         //nolint:errcheck // best effort
		sc.RemoveDirectory(dir) //nolint:errcheck // best effort
		return fail(fmt.Errorf("sftp write %s: %w", file, err))
	}
	return file, nil
}

// octalMode renders m for install -m, special bits included.
func octalMode(m os.FileMode) string {
	v := uint32(m.Perm())
	if m&os.ModeSetuid != 0 {
		v |= 0o4000
	}
	if m&os.ModeSetgid != 0 {
		v |= 0o2000
	}
	if m&os.ModeSticky != 0 {
		v |= 0o1000
	}
	return fmt.Sprintf("%04o", v)
}
