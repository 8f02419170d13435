// Package scripts holds the shell scripts gpukit runs on hosts: embedded
// text/template files under templates/, each rendered from a typed parameter
// struct that is validated first, with every interpolated value quoted
// (mvdan.cc/sh/v3 syntax.Quote), after a strict-mode prelude. Each script has
// a constructor returning the ssh.Command to run; phases never build script
// text themselves. Golden files: testdata/<script>/<os family>.sh.
package scripts

import (
	"embed"
	"fmt"
	"strings"
	"sync"
	"text/template"

	"mvdan.cc/sh/v3/syntax"
)

// Prelude starts every script: fail on errors, unset variables and broken
// pipes, and never wait for a prompt.
const Prelude = "set -euo pipefail\nexport LC_ALL=C DEBIAN_FRONTEND=noninteractive\n"

//go:embed templates/*.sh templates/lib/*.tmpl
var templates embed.FS

// Params are a script's typed parameters. Validate refuses values that do
// not belong in the script before anything is rendered: quoting is the
// second line of defence, not the first.
type Params interface {
	Validate() error
}

// Template is one embedded script taking parameters P.
type Template[P Params] struct {
	name string
	t    func() *template.Template
}

// funcs are the only functions templates may call.
var funcs = template.FuncMap{
	// quote makes s one shell word, whatever it holds.
	"quote": Quote,
	// quoteEach quotes every element, separated by spaces: a list of words.
	"quoteEach": func(list []string) (string, error) {
		words := make([]string, len(list))
		for i, s := range list {
			q, err := Quote(s)
			if err != nil {
				return "", err
			}
			words[i] = q
		}
		return strings.Join(words, " "), nil
	},
	"join": func(list []string, sep string) string { return strings.Join(list, sep) },
}

// Quote returns s as one bash word (unchanged when it needs no quoting).
func Quote(s string) (string, error) {
	q, err := syntax.Quote(s, syntax.LangBash)
	if err != nil {
		return "", fmt.Errorf("cannot quote %q: %w", s, err)
	}
	return q, nil
}

// parse names templates/name; it is parsed on first use, not at start-up,
// which every command (gpukit --help too) paid for: 30 ms and 5 MB of
// allocations for all templates. A missing or malformed template is a defect
// of the build, not of the input: it panics, and every test of the package
// catches it.
func parse[P Params](name string) *Template[P] {
	return &Template[P]{name: name, t: sync.OnceValue(func() *template.Template {
		b, err := templates.ReadFile("templates/" + name)
		if err != nil {
			panic(fmt.Sprintf("scripts: %v", err))
		}
		t, err := lib()
		if err == nil {
			t, err = t.Clone()
		}
		if err == nil {
			t, err = t.New(name).Parse(string(b))
		}
		if err != nil {
			panic(fmt.Sprintf("scripts: %v", err))
		}
		return t
	})}
}

// lib is the snippets of templates/lib (shell functions shared by scripts),
// available to every template as {{template "name" .}}; parsed once.
var lib = sync.OnceValues(func() (*template.Template, error) {
	return template.New("lib").Option("missingkey=error").Funcs(funcs).ParseFS(templates, "templates/lib/*.tmpl")
})

// Render validates p and renders the script, prelude first.
func (t *Template[P]) Render(p P) (string, error) {
	if err := p.Validate(); err != nil {
		return "", fmt.Errorf("script %s: %w", t.name, err)
	}
	var b strings.Builder
	b.WriteString(Prelude)
	if err := t.t().ExecuteTemplate(&b, t.name, p); err != nil {
		return "", fmt.Errorf("script %s: %w", t.name, err)
	}
	return b.String(), nil
}
