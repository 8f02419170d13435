package inventory

import (
	"strings"
	"testing"
)

func TestSetVersions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in, want, err string
		values              map[string]string
	}{
		{
			name:   "plain and quoted values keep their style and comments",
			in:     "spec:\n  versions:\n    nvidiaDriver: 580.95.05 # the fleet's\n    cuda: \"13.0\"\n  other: x\n",
			values: map[string]string{"nvidiaDriver": "590.48.01", "cuda": "13.1"},
			want:   "spec:\n  versions:\n    nvidiaDriver: 590.48.01 # the fleet's\n    cuda: \"13.1\"\n  other: x\n",
		},
		{
			name:   "a field not set yet is added under versions",
			in:     "spec:\n  versions:\n    nvidiaDriver: '580.95.05'\nmachines: []\n",
			values: map[string]string{"nvidiaDriver": "590.48.01", "containerToolkit": "1.20.0"},
			want:   "spec:\n  versions:\n    nvidiaDriver: '590.48.01'\n    containerToolkit: \"1.20.0\"\nmachines: []\n",
		},
		{
			name:   "no versions block",
			in:     "spec:\n  orchestrator: kubernetes\n",
			values: map[string]string{"nvidiaDriver": "590.48.01"},
			err:    "no spec.versions block",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := SetVersions([]byte(tc.in), tc.values)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}
