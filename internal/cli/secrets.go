package cli

import (
	"fmt"
	"os"

	"golang.org/x/term"

	"github.com/gpukit/gpukit/internal/connect"
)

// osSecrets reads secrets from the environment and files and, when stdin
// is a terminal, prompts for key passphrases.
func osSecrets(s Streams) connect.Secrets {
	src := connect.OSSecrets()
	if f, ok := s.In.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		src.Prompt = func(keyFile string) (string, error) {
			fmt.Fprintf(s.Err, "Passphrase for %s: ", keyFile)
			b, err := term.ReadPassword(int(f.Fd()))
			fmt.Fprintln(s.Err)
			return string(b), err
		}
	}
	return src
}
