package bundlehost

import (
	"fmt"
	"testing"
)

func TestInParts(t *testing.T) {
	size := map[string]int64{"a": 100, "b": 200, "c": 50, "big": 1000, "d": 10, "bundle.json": 1}
	for _, tc := range []struct {
		files []string
		want  string
	}{
		{[]string{"a", "b", "c", "bundle.json"}, "[[a b] [c bundle.json]]"},
		{[]string{"big", "a", "bundle.json"}, "[[big] [a bundle.json]]"},
		{[]string{"a", "big", "d", "bundle.json"}, "[[a] [big] [d bundle.json]]"},
		{[]string{"bundle.json"}, "[[bundle.json]]"},
	} {
		if got := fmt.Sprint(inParts(tc.files, size, 300)); got != tc.want {
			t.Errorf("%v: %s, want %s", tc.files, got, tc.want)
		}
	}
}
