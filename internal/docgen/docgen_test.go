package docgen

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// tree is a small command tree: a root with a command, a hidden one and
// a subcommand.
func tree() *cobra.Command {
	root := &cobra.Command{Use: "tool", Short: "A tool"}
	run := &cobra.Command{Use: "run FILE", Short: "Run a file", Long: "run runs FILE.", Run: func(*cobra.Command, []string) {}}
	run.Flags().Bool("fast", false, "run fast")
	hidden := &cobra.Command{Use: "secret", Hidden: true, Run: func(*cobra.Command, []string) {}}
	root.AddCommand(run, hidden)
	return root
}

// TestFiles checks the files of a command tree: a page and a man page
// per available command, none for a hidden one, no date, the workflow
// reference as given, and the same bytes twice.
func TestFiles(t *testing.T) {
	files, err := Files(tree(), []byte("wf\n"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, want := range []string{"cli/tool.md", "cli/tool_run.md", "cli/tool_completion_bash.md", "man/tool-run.1", "workflow.md"} {
		if !slices.Contains(names, want) {
			t.Errorf("no %s in %v", want, names)
		}
	}
	for _, name := range names {
		if strings.Contains(name, "secret") {
			t.Errorf("a hidden command has a page: %s", name)
		}
	}
	if page := files["cli/tool_run.md"]; !bytes.Contains(page, []byte("run fast")) || bytes.Contains(page, []byte("Auto generated")) {
		t.Errorf("tool_run.md:\n%s", page)
	}
	if man := files["man/tool-run.1"]; bytes.Contains(man, []byte("0001")) || !bytes.Contains(man, []byte(`.TH "TOOL-RUN" "1" "" "flow" "flow manual"`)) {
		t.Errorf("tool-run.1 has a date, or no title:\n%.200s", man)
	}
	again, err := Files(tree(), []byte("wf\n"))
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if !bytes.Equal(b, again[name]) {
			t.Errorf("%s differs from one run to the next", name)
		}
	}
}
