package debrepo

import (
	"bytes"
	"crypto"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// signConfig makes a bundle's signatures: SHA-512, which apt's gpgv
// accepts where it refuses SHA-1.
var signConfig = &packet.Config{DefaultHash: crypto.SHA512}

// NewSigningKey makes a bundle's signing key, named name: a v4 Ed25519 key
// (OpenPGP's "EdDSA legacy"), which Debian 12's gpgv (2.2) verifies, as it
// does Debian's own release key; the newer RFC 9580 Ed25519 and v6 keys it
// does not read. It never expires, as a bundle may be installed from long
// after it was made.
func NewSigningKey(name string) (*openpgp.Entity, error) {
	if strings.TrimSpace(name) == "" || strings.ContainsAny(name, "()<>\n") {
		return nil, fmt.Errorf("signing key name %q: not a plain name", name)
	}
	return openpgp.NewEntity(name, "", "", &packet.Config{
		Algorithm:   packet.PubKeyAlgoEdDSA,
		Curve:       packet.Curve25519,
		DefaultHash: crypto.SHA512,
	})
}

// Fingerprint is e's primary key fingerprint, 40 upper-case hex digits.
func Fingerprint(e *openpgp.Entity) string { return fingerprintOf(e) }

// ArmoredPublicKey is e's public key, armored: the file a host's
// signed-by= names.
func ArmoredPublicKey(e *openpgp.Entity) ([]byte, error) {
	return armored(openpgp.PublicKeyType, e.Serialize)
}

// ArmoredPrivateKey is e's private key, armored and unencrypted, for a
// bundle to keep its key across runs: protect the file it goes to.
func ArmoredPrivateKey(e *openpgp.Entity) ([]byte, error) {
	if e.PrivateKey == nil {
		return nil, errors.New("no private key")
	}
	return armored(openpgp.PrivateKeyType, func(w io.Writer) error { return e.SerializePrivateWithoutSigning(w, nil) })
}

func armored(blockType string, serialize func(w io.Writer) error) ([]byte, error) {
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, blockType, nil)
	if err != nil {
		return nil, err
	}
	if err := serialize(w); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	buf.WriteByte('\n')
	return buf.Bytes(), nil
}

// ReadSigningKey reads a key ArmoredPrivateKey wrote (or a binary one):
// exactly one, with its private key, unencrypted.
func ReadSigningKey(b []byte) (*openpgp.Entity, error) {
	el, err := readKeyring(b)
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	if len(el) != 1 {
		return nil, fmt.Errorf("signing key: %d keys, not one", len(el))
	}
	e := el[0]
	if e.PrivateKey == nil {
		return nil, errors.New("signing key: a public key only")
	}
	if e.PrivateKey.Encrypted {
		return nil, errors.New("signing key: encrypted")
	}
	return e, nil
}
