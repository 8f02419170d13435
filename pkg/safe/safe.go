// Package safe runs the work a phase hands to goroutines of its own (objects
// applied side by side, nodes updated at once, exporters read): a panic there
// would end the whole process, past the engine's recovery, with nodes
// cordoned and connections open. Here it becomes that work's error.
package safe

import "fmt"

// Call runs fn and returns its error, or a panic's as one.
func Call(fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v", v)
		}
	}()
	return fn()
}
