package cli

import "github.com/gpukit/gpukit/pkg/atomicfile"

// writePrivate replaces path whole with b, readable by its owner only (an
// admin kubeconfig, generated logins).
func writePrivate(path string, b []byte) error { return atomicfile.Write(path, b, 0o600) }
