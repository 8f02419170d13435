// Package debrepo reads and writes Debian/Ubuntu package repositories, so
// that `gpukit bundle create` can gather every OS package an air-gapped site
// needs into one signed apt repository, in pure Go on the operator's machine
// (no apt, no gpg).
//
// Read fetches a repository's InRelease (or Release and Release.gpg),
// verifies its OpenPGP signature against a keyring and pinned primary key
// fingerprints, and fetches the Packages index the Release file hashes.
// Resolve takes the dependency closure of what a site wants, as a fresh
// system needs it. Download fetches each .deb against the index's size and
// SHA256, and WriteFlat writes the result as a flat repository signed with a
// key of the bundle's own (NewSigningKey, ReadSigningKey) that apt accepts
// with `deb [signed-by=KEY] http://host/ ./`.
//
// Nothing here trusts the network: every byte taken from a repository is
// either the signed Release file or hashed by it, transitively.
package debrepo
