// Package ext stands in for Traefik's dynamic configuration extension
// (github.com/traefik/traefik/dynamic/ext), TEST TOOLING ONLY: Traefik's go.mod
// replaces it with a directory of its repository (pkg/config/dynamic/ext),
// a nested module that the module zip of github.com/traefik/traefik/v3 does
// not hold, and the module proxy serves no version of that path. Traefik
// embeds these in its HTTP configuration and routers as extension points;
// the open-source proxy sets none of their fields, so empty structs build
// the same proxy.
package ext

// HTTP extends dynamic.HTTPConfiguration.
type HTTP struct{}

// Router extends dynamic.Router.
type Router struct{}
