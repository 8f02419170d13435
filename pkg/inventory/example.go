package inventory

import _ "embed"

// exampleYAML is the annotated example inventory; a test loads it with zero
// issues and validates it against Schema, so it cannot drift from the format.
//
//go:embed example.yaml
var exampleYAML string // a string, so immutable

// Example returns an annotated example inventory (a fresh copy each call):
// a starting point for operators and documentation.
func Example() []byte {
	return []byte(exampleYAML)
}
