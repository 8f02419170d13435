package debrepo

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/clearsign"
)

// release is a verified Release file.
type release struct {
	fields map[string]string
	sha256 map[string]fileSum // path relative to the Release file -> sum
	signer string             // the primary fingerprint of the key that signed it
}

type fileSum struct {
	sha256 string
	size   int64
}

// parseRelease reads a Release file's text once its signature holds.
func parseRelease(text []byte, signer string) (*release, error) {
	paras, err := paragraphs(string(text), nil)
	if err != nil {
		return nil, err
	}
	if len(paras) != 1 {
		return nil, fmt.Errorf("%d paragraphs, not one", len(paras))
	}
	r := &release{fields: paras[0].fields, sha256: map[string]fileSum{}, signer: signer}
	if vu := r.fields["valid-until"]; vu != "" {
		t, err := parseDate(vu)
		if err != nil {
			return nil, fmt.Errorf("Valid-Until: %w", err)
		}
		if time.Now().After(t) {
			return nil, fmt.Errorf("expired: valid until %s", vu)
		}
	}
	// Only SHA256 counts: MD5 and SHA1 lists prove nothing.
	sums := r.fields["sha256"]
	if sums == "" {
		return nil, errors.New("no SHA256 field")
	}
	for _, line := range strings.Split(sums, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) != 3 {
			return nil, fmt.Errorf("SHA256 line %q: not a digest, a size and a path", line)
		}
		size, err := strconv.ParseInt(f[1], 10, 64)
		if b, herr := hex.DecodeString(f[0]); herr != nil || len(b) != 32 || err != nil || size < 0 {
			return nil, fmt.Errorf("SHA256 line %q: not a digest, a size and a path", line)
		}
		r.sha256[f[2]] = fileSum{strings.ToLower(f[0]), size}
	}
	return r, nil
}

// lists reports whether the Release file hashes the index at path in any
// compression.
func (r *release) lists(path string) bool {
	for _, ext := range []string{"", ".gz", ".xz"} {
		if _, ok := r.sha256[path+ext]; ok {
			return true
		}
	}
	return false
}

// words is the field's value split on white space.
func (r *release) words(field string) []string { return strings.Fields(r.fields[field]) }

// parseDate reads a Release file's dates ("Sat, 11 Jul 2026 10:16:37 UTC").
func parseDate(s string) (time.Time, error) {
	var first error
	for _, layout := range []string{time.RFC1123, time.RFC1123Z, "Mon, 2 Jan 2006 15:04:05 MST", "Mon, 2 Jan 2006 15:04:05 -0700"} {
		t, err := time.Parse(layout, s)
		if err == nil {
			return t, nil
		}
		if first == nil {
			first = err
		}
	}
	return time.Time{}, first
}

// clearsigned splits an InRelease file into its signed bytes (as signed),
// its text and its signature. Nothing may surround the signed message: apt
// refuses such files too, as text outside the signature could be read as
// if signed.
func clearsigned(data []byte) (signed, text, sig []byte, err error) {
	if !bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("-----BEGIN PGP SIGNED MESSAGE-----")) {
		return nil, nil, nil, errors.New("not a clearsigned message")
	}
	block, rest := clearsign.Decode(data)
	if block == nil {
		return nil, nil, nil, errors.New("not a clearsigned message")
	}
	if len(bytes.TrimSpace(rest)) != 0 {
		return nil, nil, nil, errors.New("text after the signature")
	}
	sig, err = io.ReadAll(block.ArmoredSignature.Body)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("signature: %w", err)
	}
	return block.Bytes, block.Plaintext, sig, nil
}

// dearmor is a detached signature's binary packets, whether b is armored
// (as Debian's Release.gpg is) or not.
func dearmor(b []byte) ([]byte, error) {
	if !bytes.HasPrefix(bytes.TrimSpace(b), []byte("-----BEGIN ")) {
		return b, nil
	}
	block, err := armor.Decode(bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(block.Body)
}
