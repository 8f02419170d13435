package aptrepo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
)

// File is one file of a package: a regular file (Data, or Src: a file on
// this machine whose bytes are taken, for big binaries) or a symlink (Link).
type File struct {
	Path string      // absolute, as installed: /usr/bin/kubelet
	Mode os.FileMode // of a regular file; 0 is 0644
	Data []byte
	// Src is copied into the build tree (streamed: never read into memory,
	// never changed). It must not change while a Tree that holds it is
	// published (Hash reads it first).
	Src  string
	Link string // the symlink's target
}

// Deb is a package to build with dpkg-deb.
type Deb struct {
	Name, Version, Arch                                        string
	Maintainer                                                 string
	Depends, Recommends, Conflicts, Provides, Replaces, Breaks string
	Section, Priority, Homepage                                string // Priority defaults to optional
	// Description: the first line is the synopsis, further lines the
	// extended description (Control writes them with a leading space, an
	// empty line as " .").
	Description string
	Files       []File
	Scripts     map[string]string // maintainer scripts by name (postinst, prerm, postrm, preinst)
}

// FileName is the package's name in a repository: name_version_arch.deb,
// without the version's epoch (as Debian names them).
func (d Deb) FileName() string {
	v := d.Version
	if _, after, ok := strings.Cut(v, ":"); ok {
		v = after
	}
	return d.Name + "_" + v + "_" + d.Arch + ".deb"
}

// Control is the package's DEBIAN/control, with only its non-empty fields.
func (d Deb) Control() string {
	var b stanza
	field := b.field
	field("Package", d.Name)
	field("Version", d.Version)
	field("Architecture", d.Arch)
	field("Maintainer", d.Maintainer)
	field("Depends", d.Depends)
	field("Recommends", d.Recommends)
	field("Conflicts", d.Conflicts)
	field("Breaks", d.Breaks)
	field("Replaces", d.Replaces)
	field("Provides", d.Provides)
	field("Section", d.Section)
	priority := d.Priority
	if priority == "" {
		priority = "optional"
	}
	field("Priority", priority)
	field("Homepage", d.Homepage)
	if desc := strings.TrimRight(d.Description, "\n"); desc != "" {
		lines := strings.Split(desc, "\n")
		b.WriteString("Description: " + lines[0] + "\n")
		for _, line := range lines[1:] {
			if strings.TrimSpace(line) == "" {
				line = "." // an empty line would end the paragraph
			}
			b.WriteString(" " + line + "\n")
		}
	}
	return b.String()
}

// Conffiles is the package's DEBIAN/conffiles: its files under /etc/ that
// are not symlinks, one per line (dpkg keeps a host's edits of them).
func (d Deb) Conffiles() string {
	var b strings.Builder
	for _, f := range d.Files {
		if strings.HasPrefix(f.Path, "/etc/") && f.Link == "" {
			b.WriteString(f.Path + "\n")
		}
	}
	return b.String()
}

// Build builds debs into dir with dpkg-deb, a few at a time.
func Build(ctx context.Context, dir string, debs []Deb) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("aptrepo: %w", err)
	}
	// the build trees next to the packages: removed with them if the
	// process dies
	work, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return fmt.Errorf("aptrepo: %w", err)
	}
	defer os.RemoveAll(work)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, max(runtime.NumCPU(), 2))
	)
	for i, d := range debs {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := buildDeb(ctx, filepath.Join(work, fmt.Sprint(i)), filepath.Join(dir, d.FileName()), d); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("aptrepo: package %s: %w", d.FileName(), err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func buildDeb(ctx context.Context, tree, out string, d Deb) error {
	write := func(path string, mode os.FileMode, data []byte) error {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(path, data, mode); err != nil {
			return err
		}
		return os.Chmod(path, mode) // whatever the umask
	}
	if err := write(filepath.Join(tree, "DEBIAN", "control"), 0o644, []byte(d.Control())); err != nil {
		return err
	}
	if c := d.Conffiles(); c != "" {
		if err := write(filepath.Join(tree, "DEBIAN", "conffiles"), 0o644, []byte(c)); err != nil {
			return err
		}
	}
	for name, body := range d.Scripts {
		if err := write(filepath.Join(tree, "DEBIAN", name), 0o755, []byte(body)); err != nil {
			return err
		}
	}
	for _, f := range d.Files {
		p := filepath.Join(tree, f.Path)
		mode := f.Mode
		if mode == 0 {
			mode = 0o644
		}
		switch {
		case f.Link != "" && (f.Data != nil || f.Src != ""), f.Data != nil && f.Src != "":
			return fmt.Errorf("%s: more than one of Data, Src and Link", f.Path)
		case f.Link != "":
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
			if err := os.Symlink(f.Link, p); err != nil {
				return err
			}
		case f.Src != "":
			if err := CopyFile(f.Src, p, mode); err != nil {
				return err
			}
		default:
			if err := write(p, mode, f.Data); err != nil {
				return err
			}
		}
	}
	// directories made by MkdirAll under a restrictive umask: dpkg-deb keeps their modes
	if err := filepath.WalkDir(tree, func(p string, e os.DirEntry, err error) error {
		if err == nil && e.IsDir() {
			err = os.Chmod(p, 0o755)
		}
		return err
	}); err != nil {
		return err
	}
	c := exec.CommandContext(ctx, "dpkg-deb", "--root-owner-group", "-Zgzip", "-z6", "--build", tree, out)
	if b, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("dpkg-deb: %w\n%s", err, b)
	}
	return nil
}

// CopyFile copies src's bytes to dst (made with its directories) with mode.
// Never a hard link: tar (in dpkg-deb, in an image push) fails with "file
// changed as we read it" when another build links the same file meanwhile
// (its ctime moves), and a chmod would change src.
func CopyFile(src, dst string, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	st, err := os.Stat(src)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s is not a regular file", src)
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(dst, mode)
	}
	return err
}

// stanza is a deb822 paragraph (control, Release) being written: fields
// without a value are left out.
type stanza struct{ strings.Builder }

func (s *stanza) field(name, value string) {
	if value != "" {
		s.WriteString(name + ": " + value + "\n")
	}
}
