//go:build tools

// Traefik for the lab (TEST TOOLING ONLY), built from its module by
// ../build.sh traefik at the version of the traefik chart in gpukit's bill
// of materials (its appVersion). The module proxy cannot serve Traefik's
// go.mod as it is, so two modules are local stand-ins (standins/, each
// says why):
//   - github.com/traefik/traefik/dynamic/ext: Traefik's go.mod replaces it
//     with a nested module of its repository that its module zip lacks;
//   - github.com/abbot/go-http-auth: Traefik replaces it with containous'
//     fork, which the proxy refuses; abbot's v0.4.0 plus the fork's two
//     functions that Traefik calls.
//
// Importing the command here makes `go mod tidy` record every go.sum
// entry it needs.
package tools

import _ "github.com/traefik/traefik/v3/cmd/traefik"
