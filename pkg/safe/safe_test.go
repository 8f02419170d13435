package safe

import (
	"errors"
	"sync"
	"testing"
)

func TestCall(t *testing.T) {
	want := errors.New("refused")
	if err := Call(func() error { return want }); err != want {
		t.Errorf("an error: %v", err)
	}
	if err := Call(func() error { return nil }); err != nil {
		t.Errorf("none: %v", err)
	}
	var wg sync.WaitGroup
	var got error
	wg.Go(func() { got = Call(func() error { var m map[string]int; m["x"] = 1; return nil }) })
	wg.Wait()
	if got == nil || got.Error() != "panic: assignment to entry in nil map" {
		t.Errorf("a panic in a goroutine: %v", got)
	}
}
