package engine

import (
	"context"
	"sync"
)

// forEach calls fn(i) for i in [0, n) with at most limit calls in flight and
// returns how many it started. Unlike an errgroup, one call's failure cancels
// nothing: hosts fail alone. Once ctx is done it starts no more calls (those
// left are i >= the result) and waits for the running ones, which see ctx
// themselves.
func forEach(ctx context.Context, limit, n int, fn func(i int)) int {
	if limit <= 0 {
		limit = 1
	}
	sem := make(chan struct{}, limit)
	var wg sync.WaitGroup
	started := 0
	for ; started < n; started++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		// select picks at random when both are ready: check again, so that no
		// new host starts after cancellation.
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			fn(i)
		}(started)
	}
	wg.Wait()
	return started
}
