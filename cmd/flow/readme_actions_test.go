package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
)

// TestReadmeActionsExample lints the README's GitHub Actions example with
// actionlint, so the workflow users copy stays one GitHub accepts.
func TestReadmeActionsExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "<!-- actionlint -->\n```yaml\n"
	_, rest, ok := bytes.Cut(readme, []byte(marker))
	if !ok {
		t.Fatalf("README.md has no %q block: the GitHub Actions example is gone", strings.TrimSpace(marker))
	}
	example, _, ok := bytes.Cut(rest, []byte("\n```\n"))
	if !ok {
		t.Fatal("README.md: the GitHub Actions example's code block is not closed")
	}
	linter, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	problems, err := linter.Lint("<stdin>", append(example, '\n'), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("README.md GitHub Actions example:%d:%d: %s [%s]", p.Line, p.Column, p.Message, p.Kind)
	}
}
