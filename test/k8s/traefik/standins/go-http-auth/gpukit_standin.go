// The rest of this package is github.com/abbot/go-http-auth v0.4.0, copied
// from the module proxy by ../../../build.sh traefik at build time (TEST
// TOOLING ONLY). Traefik's go.mod replaces that module with a fork,
// github.com/containous/go-http-auth, which the module proxy refuses. The
// fork adds the two functions below, which Traefik's basicAuth and
// digestAuth middlewares call. They are written here from that use.

package auth

import (
	"fmt"
	"net/http"
	"strings"
	"time"
)

// CheckSecret reports whether password matches secret, an htpasswd entry's
// hash (MD5-crypt, {SHA} or bcrypt), as BasicAuth.CheckAuth compares them.
func CheckSecret(password, secret string) bool {
	compare := compareFuncs[0].compare
	for _, c := range compareFuncs[1:] {
		if strings.HasPrefix(secret, c.prefix) {
			compare = c.compare
			break
		}
	}
	return compare([]byte(secret), []byte(password)) == nil
}

// RequireAuthStale is RequireAuth with stale=true (RFC 7616, 3.3): the
// client's nonce is no longer valid, its credentials may still be.
func (a *DigestAuth) RequireAuthStale(w http.ResponseWriter, r *http.Request) {
	if len(a.clients) > a.ClientCacheSize+a.ClientCacheTolerance {
		a.Purge(a.ClientCacheTolerance * 2)
	}
	nonce := RandomKey()
	a.clients[nonce] = &digest_client{nc: 0, last_seen: time.Now().UnixNano()}
	w.Header().Set(contentType, a.Headers.V().UnauthContentType)
	w.Header().Set(a.Headers.V().Authenticate,
		fmt.Sprintf(`Digest realm="%s", nonce="%s", opaque="%s", algorithm="MD5", qop="auth", stale=true`, a.Realm, nonce, a.Opaque))
	w.WriteHeader(a.Headers.V().UnauthCode)
	_, _ = w.Write([]byte(a.Headers.V().UnauthResponse))
}
