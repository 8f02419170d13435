package cli

import (
	"encoding/json"

	"github.com/gpukit/gpukit/internal/flow"
	"github.com/gpukit/gpukit/pkg/ui"
)

// writeResult writes a command's final object after the run's events (-o
// json: one line, its type and apiVersion first); the plain display says
// the same in words, command by command.
func writeResult(out ui.Output, r flow.Result) error {
	if out.Format != ui.FormatJSON {
		return nil
	}
	return json.NewEncoder(out.W).Encode(r)
}
