package engine

import (
	"sync"
	"testing"
)

// One share per host, the same one every time, from any goroutine.
func TestPerHost(t *testing.T) {
	var p PerHost[struct{ n int }]
	var wg sync.WaitGroup
	seen := make([]*struct{ n int }, 8)
	for i := range seen {
		wg.Go(func() { seen[i] = p.Of("gpu-1") })
	}
	wg.Wait()
	for _, s := range seen {
		if s != seen[0] {
			t.Fatal("two shares for one host")
		}
	}
	p.Of("gpu-1").n = 3
	if p.Of("gpu-1").n != 3 || p.Of("gpu-2").n != 0 || p.Of("gpu-2") == p.Of("gpu-1") {
		t.Error("a host's share is its own")
	}
}
