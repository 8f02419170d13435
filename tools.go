//go:build tools

package tools

import (
	_ "github.com/charmbracelet/bubbletea"
	_ "github.com/charmbracelet/lipgloss"
	_ "github.com/invopop/jsonschema"
	_ "github.com/melbahja/goph"
	_ "github.com/pkg/sftp"
	_ "github.com/santhosh-tekuri/jsonschema/v6"
	_ "github.com/spf13/cobra"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/crypto/ssh/agent"
	_ "golang.org/x/crypto/ssh/knownhosts"
	_ "golang.org/x/sync/errgroup"
	_ "golang.org/x/term"
	_ "mvdan.cc/sh/v3/syntax"
)
