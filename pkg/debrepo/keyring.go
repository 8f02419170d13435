package debrepo

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// readKeyring reads OpenPGP keys, armored (one block or several, as
// keyring files concatenate them) or binary (as /usr/share/keyrings holds
// them).
func readKeyring(b []byte) (openpgp.EntityList, error) {
	if !bytes.HasPrefix(bytes.TrimSpace(b), []byte("-----BEGIN ")) {
		el, err := openpgp.ReadKeyRing(bytes.NewReader(b))
		if err == nil && len(el) == 0 {
			err = errors.New("no key")
		}
		return el, err
	}
	// Each block is decoded apart: armor.Decode reads ahead of the block it
	// returns, losing the start of the next.
	text := bytes.TrimSpace(b)
	var starts []int
	for i := 0; ; {
		starts = append(starts, i)
		next := bytes.Index(text[i+1:], []byte("\n-----BEGIN "))
		if next < 0 {
			break
		}
		i += 1 + next + 1 // past the newline
	}
	var out openpgp.EntityList
	for k, start := range starts {
		end := len(text)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		block, err := armor.Decode(bytes.NewReader(text[start:end]))
		if err != nil {
			return nil, err
		}
		el, err := openpgp.ReadKeyRing(block.Body)
		if err != nil {
			return nil, err
		}
		out = append(out, el...)
	}
	return out, nil
}

// normFingerprint is fp as 40 upper-case hex digits, spaces removed.
func normFingerprint(fp string) (string, error) {
	s := strings.ToUpper(strings.Join(strings.Fields(fp), ""))
	if b, err := hex.DecodeString(s); err != nil || len(b) != 20 {
		return "", fmt.Errorf("fingerprint %q: not 40 hex digits", fp)
	}
	return s, nil
}

// fingerprintOf is the fingerprint of e's primary key, the one pinned even
// when a subkey signs (as Debian's archive keys' do).
func fingerprintOf(e *openpgp.Entity) string {
	return strings.ToUpper(hex.EncodeToString(e.PrimaryKey.Fingerprint))
}

// verifier checks signatures against the keys of a keyring whose primary
// fingerprints are pinned.
type verifier struct {
	all    openpgp.EntityList
	pinned openpgp.EntityList
	pins   []string
}

func newVerifier(keyring []byte, fingerprints []string) (*verifier, error) {
	if len(fingerprints) == 0 {
		return nil, errors.New("no fingerprint pinned")
	}
	all, err := readKeyring(keyring)
	if err != nil {
		return nil, fmt.Errorf("keyring: %w", err)
	}
	v := &verifier{all: all}
	for _, fp := range fingerprints {
		n, err := normFingerprint(fp)
		if err != nil {
			return nil, err
		}
		v.pins = append(v.pins, n)
	}
	for _, e := range all {
		if slices.Contains(v.pins, fingerprintOf(e)) {
			v.pinned = append(v.pinned, e)
		}
	}
	if len(v.pinned) == 0 {
		return nil, fmt.Errorf("the keyring holds none of the pinned keys %s", strings.Join(v.pins, ", "))
	}
	return v, nil
}

// check verifies a detached signature (binary) of signed with the pinned
// keys, returning the signer's fingerprint. Only the pinned keys are
// offered: go-crypto checks the first signature whose key it holds, and a
// Release file is often signed by several keys, some not pinned. A
// signature only an unpinned key of the keyring makes fails naming that
// key's fingerprint.
func (v *verifier) check(signed []byte, sig func() io.Reader) (string, error) {
	e, err := openpgp.CheckDetachedSignature(v.pinned, bytes.NewReader(signed), sig(), nil)
	if err == nil {
		return fingerprintOf(e), nil
	}
	if !errors.Is(err, pgperrors.ErrUnknownIssuer) {
		return "", fmt.Errorf("signature: %w", err)
	}
	if e, err := openpgp.CheckDetachedSignature(v.all, bytes.NewReader(signed), sig(), nil); err == nil {
		return "", fmt.Errorf("signed by key %s, which is not pinned (pinned: %s)", fingerprintOf(e), strings.Join(v.pins, ", "))
	}
	return "", fmt.Errorf("signed by %s, not a key of the keyring (pinned: %s)", strings.Join(issuers(sig()), ", "), strings.Join(v.pins, ", "))
}

// issuers names the keys that made the signatures in r, by fingerprint
// when the signature says it, else by key ID.
func issuers(r io.Reader) []string {
	var out []string
	packets := packet.NewReader(r)
	for {
		p, err := packets.Next()
		if err != nil {
			break
		}
		sig, ok := p.(*packet.Signature)
		switch {
		case !ok:
		case len(sig.IssuerFingerprint) > 0:
			out = append(out, "key "+strings.ToUpper(hex.EncodeToString(sig.IssuerFingerprint)))
		case sig.IssuerKeyId != nil:
			out = append(out, fmt.Sprintf("key ID %016X", *sig.IssuerKeyId))
		}
	}
	if len(out) == 0 {
		return []string{"no key it names"}
	}
	return out
}
