// Package facts is what gpukit learns about a host by probing it: OS, kernel,
// hardware, GPUs, runtimes. One probe script gathers everything in a single
// round trip; Parse turns its output into Facts.
package facts
