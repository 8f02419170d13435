package inventory

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"

	"github.com/gpukit/gpukit/pkg/imageref"
	"github.com/gpukit/gpukit/pkg/safetext"
)

// Site is what an inventory names on the machine running gpukit, beyond
// the SSH logins: read once before a run (ReadSite), so that a missing file
// or secret is bad input before any host is touched.
type Site struct {
	// RegistryCA is spec.mirrors.registryCAFile's PEM certificates.
	RegistryCA []byte
	// RegistryPassword is spec.mirrors.registryLogin's password.
	RegistryPassword string
}

// RegistryMirror is the inventory's registry mirror, with its CA and login
// as read from this machine (ReadSite); ok false without one.
func (inv *Inventory) RegistryMirror() (m imageref.Mirror, ok bool) {
	r := inv.Cluster.Spec.Mirrors.Registry
	if r == "" {
		return imageref.Mirror{}, false
	}
	m = imageref.ParseMirror(r)
	m.CA, m.Authorization = inv.Site.RegistryCA, inv.RegistryAuthorization()
	return m, true
}

// RegistryAuthorization is the registry login as an HTTP Authorization
// header value ("Basic ..."), or "" without a login.
func (inv *Inventory) RegistryAuthorization() string {
	l := inv.Cluster.Spec.Mirrors.RegistryLogin
	if l == nil || inv.Site.RegistryPassword == "" {
		return ""
	}
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(l.Username+":"+inv.Site.RegistryPassword))
}

// SiteSecrets are the secret values ReadSite read, in every form a host or
// a log could show them: for the run's redactor.
func (inv *Inventory) SiteSecrets() []string {
	if inv.Site.RegistryPassword == "" {
		return nil
	}
	auth := inv.RegistryAuthorization()
	return []string{inv.Site.RegistryPassword, auth, auth[len("Basic "):]}
}

// ReadSite reads the registry mirror's CA file (PEM certificates, each
// parsed) and resolves its login's password, through the functions given
// (os.LookupEnv and os.ReadFile in the binary). Every problem is reported
// with its file, line and field; secrets are never echoed.
func (inv *Inventory) ReadSite(lookupEnv func(string) (string, bool), readFile func(string) ([]byte, error)) error {
	m := &inv.Cluster.Spec.Mirrors
	var errs []error
	at := func(path string) string {
		if p, ok := inv.pos.value[path]; ok {
			return p.String()
		}
		return inv.File
	}
	if inv.Cluster.Spec.Bundle != nil {
		if err := inv.useBundle(readFile); err != nil {
			errs = append(errs, fmt.Errorf("%s: spec.bundle: %w", at("spec.bundle.dir"), err))
		}
	}
	if f := m.RegistryCAFile; f != "" {
		const path = "spec.mirrors.registryCAFile"
		p, err := ExpandHome(f, lookupEnv)
		var data []byte
		if err == nil {
			data, err = readFile(p)
		}
		if err == nil {
			err = checkCertificates(data)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: CA file %s: %w", at(path), path, safetext.Name(f), err))
		} else {
			inv.Site.RegistryCA = data
		}
	}
	if l := m.RegistryLogin; l != nil && l.Password != nil {
		const path = "spec.mirrors.registryLogin.password"
		v, err := l.Password.Resolve(lookupEnv, readFile)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %s: %w", at(path), path, err))
		} else {
			inv.Site.RegistryPassword = v
		}
	}
	return errors.Join(errs...)
}

// checkCertificates accepts PEM data of one or more certificates, nothing
// else (a private key here would be shipped to every host).
func checkCertificates(data []byte) error {
	n := 0
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		if b.Type != "CERTIFICATE" {
			return fmt.Errorf("holds a %s block: a CA file holds certificates only", safetext.Name(b.Type))
		}
		if _, err := x509.ParseCertificate(b.Bytes); err != nil {
			return fmt.Errorf("certificate %d: %w", n+1, err)
		}
		n++
	}
	if n == 0 {
		return errors.New("no PEM certificate in it")
	}
	return nil
}
