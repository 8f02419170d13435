package event

import (
	"encoding/json"
	"testing"
	"time"
)

// TestJSONFieldNames pins the wire form of --output json: renaming a field or
// a type value breaks consumers, so it must fail here first.
func TestJSONFieldNames(t *testing.T) {
	t.Parallel()
	e := Event{
		Time: time.Date(2025, 1, 2, 3, 4, 5, 6e6, time.UTC), Type: HostFailed,
		Phase: "nvidia/driver", Title: "Install the driver", Host: "gpu-007", Step: "install",
		Message: "m", Line: "l", Stream: Stderr, Script: "s", Err: "boom", Status: StatusFailed,
		Done: 1, Failed: 2, Skipped: 3, Total: 6, Phases: []string{"a"}, Log: "/l", DurationMS: 1500, DryRun: true,
	}
	got, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"time":"2025-01-02T03:04:05.006Z","type":"host_failed","phase":"nvidia/driver","title":"Install the driver","host":"gpu-007","step":"install","message":"m","line":"l","stream":"stderr","script":"s","error":"boom","status":"failed","done":1,"failed":2,"skipped":3,"total":6,"phases":["a"],"log":"/l","durationMs":1500,"dryRun":true}`
	if string(got) != want {
		t.Errorf("json:\n got %s\nwant %s", got, want)
	}
	var back Event
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	if back.Duration() != 1500*time.Millisecond || back.Host != "gpu-007" {
		t.Errorf("round trip: %+v", back)
	}
	min, _ := json.Marshal(Event{Type: Output})
	if string(min) != `{"time":"0001-01-01T00:00:00Z","type":"output"}` {
		t.Errorf("empty fields not omitted: %s", min)
	}
}

func TestMillis(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]int64{0: 0, time.Microsecond: 1, 2500 * time.Millisecond: 2500} {
		if got := Millis(d); got != want {
			t.Errorf("Millis(%v) = %d, want %d", d, got, want)
		}
	}
}
