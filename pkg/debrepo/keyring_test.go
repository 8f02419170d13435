package debrepo

import (
	"bytes"
	"testing"
)

func TestReadKeyring(t *testing.T) {
	a, b, c := newKey(t), newKey(t), newKey(t)
	var binary bytes.Buffer
	a.Serialize(&binary)
	b.Serialize(&binary)
	for _, tc := range []struct {
		name string
		in   []byte
		want []string // fingerprints; nil: an error
	}{
		{"armored", publicKey(t, a), []string{Fingerprint(a)}},
		{"armored blocks, blank lines between", bytes.Join([][]byte{publicKey(t, a), publicKey(t, b), publicKey(t, c)}, []byte("\n\n")),
			[]string{Fingerprint(a), Fingerprint(b), Fingerprint(c)}},
		{"binary", binary.Bytes(), []string{Fingerprint(a), Fingerprint(b)}},
		{"empty", nil, nil},
		{"garbage", []byte("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nnot base64\n-----END PGP PUBLIC KEY BLOCK-----\n"), nil},
	} {
		el, err := readKeyring(tc.in)
		var got []string
		for _, e := range el {
			got = append(got, fingerprintOf(e))
		}
		if (tc.want == nil) != (err != nil) || len(got) != len(tc.want) {
			t.Errorf("%s: %v %v, want %v", tc.name, got, err, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
			}
		}
	}
}

func TestNormFingerprint(t *testing.T) {
	for in, want := range map[string]string{
		"b8b8 0b5b 623e ab6a d877  5c45 b7c5 d7d6 3509 47f8": "B8B80B5B623EAB6AD8775C45B7C5D7D6350947F8",
		"B8B80B5B623EAB6AD8775C45B7C5D7D6350947F8":           "B8B80B5B623EAB6AD8775C45B7C5D7D6350947F8",
		"B8B80B5B623EAB6AD8775C45B7C5D7D6350947F":            "",
		"0xB8B80B5B623EAB6AD8775C45B7C5D7D6350947F8":         "",
		"350947F8": "",
	} {
		got, err := normFingerprint(in)
		if got != want || (err != nil) != (want == "") {
			t.Errorf("%q: %q %v, want %q", in, got, err, want)
		}
	}
}
