package local

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/keytest"
	"github.com/flow-run/flow/internal/safefs"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
	"github.com/flow-run/flow/runner/spec"
)

// The rules of agent_orchestrator's contract, one table each.

func TestPyJSON(t *testing.T) {
	tests := map[string]string{
		`"red"`:                     `"red"`,
		`{"n":2,"a":[1,true,null]}`: `{"a": [1, true, null], "n": 2}`,
		`["a","b"]`:                 `["a", "b"]`,
		`"Réinitialiser"`:           `"R\u00e9initialiser"`,
		`"😀"`:                       `"\ud83d\ude00"`,
		`"a\"b\\c\nd\te<f>&"`:       `"a\"b\\c\nd\te<f>&"`,
		`"\u007f\u0001"`:            `"\u007f\u0001"`,
		`1.5`:                       `1.5`,
		`{}`:                        `{}`,
		`[]`:                        `[]`,
		`not json`:                  `not json`,
	}
	for in, want := range tests {
		if got := pyJSON(json.RawMessage(in)); got != want {
			t.Errorf("pyJSON(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestAddMemoryEntry(t *testing.T) {
	tests := []struct {
		name, content, section, entry, want string
		changed                             bool
	}{
		{"the template's section", memoryTemplate, "Gotchas", "Run make first.",
			"# AGENTS.md\n\n## Gotchas\n- Run make first.\n", true},
		{"a new section at the end", memoryTemplate, "Notes", "- Use the cache.",
			"# AGENTS.md\n\n## Gotchas\n\n## Notes\n- Use the cache.\n", true},
		{"before the next heading", "# A\n\n## Gotchas\n- one\n\n## Notes\n- two\n", "Gotchas", "three",
			"# A\n\n## Gotchas\n- one\n- three\n\n## Notes\n- two\n", true},
		{"a duplicate", "## Notes\n- one thing\n", "Notes", "one thing", "## Notes\n- one thing\n", false},
		{"empty", "## Notes\n", "Notes", "   ", "## Notes\n", false},
		{"a section named with regexp characters", "## C++ (tips)\n- a\n", "C++ (tips)", "b",
			"## C++ (tips)\n- a\n- b\n", true},
		{"a heading only by its prefix is another", "## Notes more\n- a\n", "Notes", "b",
			"## Notes more\n- a\n\n## Notes\n- b\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := addMemoryEntry(tt.content, tt.section, tt.entry)
			if got != tt.want || changed != tt.changed {
				t.Errorf("addMemoryEntry = %q, %v; want %q, %v", got, changed, tt.want, tt.changed)
			}
		})
	}
}

func TestLowValueEntry(t *testing.T) {
	tests := map[string]string{
		"Run make generate before committing protos.":   "",
		"- Run make generate before committing protos.": "",
		"See line 42 of main.go for the trick.":         "low-value pattern line",
		"The bug is in server.go:120 somewhere.":        `low-value pattern :\d+\b`,
		"This module handles the routing of requests.":  "low-value pattern ^this",
		"Provides the cache for every handler.":         "low-value pattern ^provides?",
		"Note: the tests are slow on CI machines.":      "low-value pattern ^note:",
		"Uses dataclass for every model here.":          "low-value pattern uses?",
		"Too short.":                                    "too short",
		strings.Repeat("long words ", 14) + "end.":      "too long",
	}
	for entry, want := range tests {
		got := lowValueEntry(entry)
		if want == "" && got != "" || want != "" && !strings.Contains(got, want) {
			t.Errorf("lowValueEntry(%q) = %q, want %q", entry, got, want)
		}
	}
}

func TestMemoryUpdates(t *testing.T) {
	got := memoryUpdates(json.RawMessage(`{"memory_updates": [
		{"scope": "src", "section": "Patterns", "entry": "e1"},
		{"entry": "e2"},
		"not an object", 3, null,
		{"scope": null, "section": 5, "entry": "e3"}]}`))
	want := []memoryUpdate{{"src", "Patterns", "e1"}, {".", "Notes", "e2"}, {".", "5", "e3"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("memoryUpdates = %+v, want %+v", got, want)
	}
	for _, r := range []string{``, `{}`, `{"memory_updates": "x"}`, `not json`} {
		if got := memoryUpdates(json.RawMessage(r)); len(got) != 0 {
			t.Errorf("memoryUpdates(%s) = %v", r, got)
		}
	}
}

// TestWriteMemory writes memory on the real disk through safefs, as a
// run does: nothing is written through a link, or outside the
// repository.
func TestWriteMemory(t *testing.T) {
	repo := t.TempDir()
	outside := t.TempDir()
	for _, d := range []string{"src", "docs"} {
		if err := os.Mkdir(filepath.Join(repo, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(outside, "secret.md")
	if err := os.WriteFile(secret, []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(repo, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(repo, "docs", "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fsys := safefs.New(repo)
	const entry = "An entry long enough to be kept as memory."
	tests := []struct {
		scope, file, err string
		written          bool
	}{
		{".", "AGENTS.md", "", true},
		{"", "AGENTS.md", "", false}, // the same entry: skipped
		{"src", "src/AGENTS.md", "", true},
		{"src/../src", "src/AGENTS.md", "", false},
		{"../x", "", "leads out of the repository", false},
		{"/etc", "", "leads out of the repository", false},
		{"missing", "", "no directory of the repository", false},
		{"file", "", "no directory of the repository", false},
		{"linked", "", "no directory", false},
		{"docs", "", "symbolic link", false},
	}
	for _, tt := range tests {
		file, written, err := writeMemory(fsys, repo, memoryUpdate{scope: tt.scope, section: "Notes", entry: entry})
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("scope %q: err = %v, want %q", tt.scope, err, tt.err)
			}
			continue
		}
		if err != nil || file != tt.file || written != tt.written {
			t.Errorf("scope %q: %q, %v, %v; want %q, %v", tt.scope, file, written, err, tt.file, tt.written)
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != "keep\n" {
		t.Errorf("the file behind the link was written: %q", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "AGENTS.md")); err == nil {
		t.Error("AGENTS.md was written through the linked scope")
	}
	b, _ := os.ReadFile(filepath.Join(repo, "AGENTS.md"))
	if want := memoryTemplate + "\n## Notes\n- " + entry + "\n"; string(b) != want {
		t.Errorf("AGENTS.md = %q, want %q", b, want)
	}
	if _, _, err := writeMemory(fsys, repo, memoryUpdate{scope: ".", section: "Notes", entry: "short"}); err == nil || !strings.Contains(err.Error(), "too short") {
		t.Errorf("a short entry: %v", err)
	}
}

func TestLedger(t *testing.T) {
	fs := afero.NewMemMapFs()
	day := time.Date(2026, 3, 1, 23, 30, 0, 0, time.UTC)
	for i, tt := range []struct {
		at   time.Time
		usd  float64
		want float64
	}{
		{day, 0.5, 0.5},
		{day.Add(20 * time.Minute), 0.25, 0.75},
		// 00:10 UTC the next day, though 19:10 the day before in New York.
		{day.Add(40 * time.Minute).In(time.FixedZone("EST", -5*3600)), 1, 1},
	} {
		got, err := AddCost(fs, "/r", tt.at, tt.usd)
		if err != nil || got != tt.want {
			t.Errorf("%d: AddCost = %v, %v; want %v", i, got, err, tt.want)
		}
	}
	l, err := ReadLedger(fs, "/r")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]LedgerDay{"2026-03-01": {0.75, 2}, "2026-03-02": {1, 1}}
	if !reflect.DeepEqual(l.Days, want) {
		t.Errorf("ledger = %v, want %v", l.Days, want)
	}
	// The oldest days go once there are more than the ledger keeps.
	for i := range ledgerDays + 5 {
		if _, err := AddCost(fs, "/r", day.AddDate(0, 0, i+2), 1); err != nil {
			t.Fatal(err)
		}
	}
	if l, _ := ReadLedger(fs, "/r"); len(l.Days) != ledgerDays || l.Days["2026-03-01"] != (LedgerDay{}) {
		t.Errorf("ledger keeps %d days, 2026-03-01: %v", len(l.Days), l.Days["2026-03-01"])
	}
	// A ledger that cannot be read starts again, and says so.
	_ = afero.WriteFile(fs, "/r/.agents/"+LedgerFile, []byte("{"), 0o644)
	if got, err := AddCost(fs, "/r", day, 2); got != 2 || err == nil {
		t.Errorf("a broken ledger: %v, %v", got, err)
	}
}

// TestLedgerShared adds costs from many goroutines, each through its
// own open of the files, on the real disk: the lock loses none.
func TestLedgerShared(t *testing.T) {
	repo := t.TempDir()
	at := time.Now()
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fsys := safefs.New(repo)
			for range 5 {
				if _, err := AddCost(fsys, repo, at, 0.5); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	l, err := ReadLedger(afero.NewOsFs(), repo)
	if err != nil {
		t.Fatal(err)
	}
	if d := l.Days[ledgerDay(at)]; d.Sessions != 40 || d.CostUSD != 20 {
		t.Errorf("ledger = %+v, want 40 sessions, 20 USD", d)
	}
}

// orchRun is a run of a workflow under agent_orchestrator's contract,
// enough for the rules below.
func orchRun(fs afero.Fs, wf *config.Workflow) *run {
	wf.Compat = config.CompatOrchestrator
	return &run{r: &Runner{FS: fs}, opts: spec.Options{Repo: "/r"}, wf: wf, dir: "/r/.agents/runs/x",
		st: &core.State{RunID: "x", Steps: map[core.StepKey]*core.StepState{}}, environ: map[string]string{}}
}

func TestFindPrompt(t *testing.T) {
	fs := afero.NewMemMapFs()
	for path, text := range map[string]string{
		"/r/prompts/shared.md":         "shared",
		"/r/wf/local.md":               "local",
		"/r/.agents/prompts/over.md":   "override",
		"/r/wf/sub/over.md":            "not the override",
		"/elsewhere/prompts/secret.md": "secret",
		"/r/top.md":                    "top",
	} {
		if err := afero.WriteFile(fs, path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	x := orchRun(fs, &config.Workflow{File: "/r/wf/w.yaml"})
	tests := []struct{ path, found, text, err string }{
		{"../prompts/shared.md", "/r/prompts/shared.md", "shared", ""},
		{"local.md", "/r/wf/local.md", "local", ""},
		{"sub/over.md", "/r/.agents/prompts/over.md", "override", ""},
		{"top.md", "/r/top.md", "top", ""},
		{"/r/top.md", "/r/top.md", "top", ""},
		{"../../elsewhere/prompts/secret.md", "", "", "outside the repository and the workflow's directory"},
		{"../nothing.md", "", "", "prompt ../nothing.md not found; looked in /r/.agents/prompts/nothing.md, /r/nothing.md"},
	}
	for _, tt := range tests {
		found, text, err := x.findPrompt(tt.path, 1<<20)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err = %v, want %q", tt.path, err, tt.err)
			}
			continue
		}
		if err != nil || found != tt.found || string(text) != tt.text {
			t.Errorf("%s: %q %q %v; want %q %q", tt.path, found, text, err, tt.found, tt.text)
		}
	}
}

func TestOrchestratorFacts(t *testing.T) {
	tests := []struct {
		name   string
		report *record.Report
		exit   int
		err    string
		want   int
		usage  *core.AgentUsage
	}{
		{"completed with exit 3", &record.Report{Status: "completed"}, 3, "", 0, nil},
		{"failed with exit 0", &record.Report{Status: "failed"}, 0, "", 0, nil},
		{"failed with exit 2", &record.Report{Status: "failed"}, 2, "", 2, nil},
		{"no report", nil, 3, "", 3, nil},
		{"an unreadable report", &record.Report{Status: "completed"}, 3, "lacks run_id", 3, nil},
		{"a cost", &record.Report{Status: "completed", Metrics: map[string]string{"cost_usd": "0.25"}}, 0, "", 0, &core.AgentUsage{CostUSD: 0.25, Sessions: 1}},
		{"no cost", &record.Report{Status: "completed", Metrics: map[string]string{"cost_usd": "lots"}}, 0, "", 0, nil},
	}
	x := orchRun(afero.NewMemMapFs(), &config.Workflow{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &core.SessionFacts{ExitCode: tt.exit, ReportErr: tt.err}
			o := &core.Outcome{}
			x.orchestratorFacts(f, o, tt.report)
			if f.ExitCode != tt.want || !reflect.DeepEqual(o.Usage, tt.usage) {
				t.Errorf("exit %d, usage %+v; want %d, %+v", f.ExitCode, o.Usage, tt.want, tt.usage)
			}
		})
	}
	// flow's own rules: the exit code stands.
	x.wf.Compat = ""
	f := &core.SessionFacts{ExitCode: 3}
	x.orchestratorFacts(f, &core.Outcome{}, &record.Report{Status: "completed"})
	if f.ExitCode != 3 {
		t.Errorf("flow's format: exit %d", f.ExitCode)
	}
}

func TestExprArtifacts(t *testing.T) {
	x := orchRun(afero.NewMemMapFs(), &config.Workflow{})
	in := []string{"/r/.agents/runs/x/artifacts/a.json", "rel.md", "/elsewhere/b.json", "/r"}
	want := []string{".agents/runs/x/artifacts/a.json", "rel.md", "/elsewhere/b.json", "."}
	if got := x.exprArtifacts(in); !reflect.DeepEqual(got, want) {
		t.Errorf("exprArtifacts = %q, want %q", got, want)
	}
	if in[0] != "/r/.agents/runs/x/artifacts/a.json" {
		t.Error("the recorded artifacts were changed")
	}
	x.wf.Compat = ""
	if got := x.exprArtifacts(in); !reflect.DeepEqual(got, in) {
		t.Errorf("flow's format: %q", got)
	}
}

func TestIssueEnv(t *testing.T) {
	tests := []struct {
		name    string
		inv     []string
		environ map[string]string
		want    []string
	}{
		{"none", nil, nil, nil},
		{"from --issue-number", []string{"ISSUE_NUMBER=42"}, nil, []string{
			"ISSUE_MARKDOWN_FILENAME=gh_issue_42.md", "ISSUE_MARKDOWN_DIR=/a", "ISSUE_MARKDOWN_PATH=/a/gh_issue_42.md"}},
		{"from flow's environment", nil, map[string]string{"ISSUE_NUMBER": "7"}, []string{
			"ISSUE_MARKDOWN_FILENAME=gh_issue_7.md", "ISSUE_MARKDOWN_DIR=/a", "ISSUE_MARKDOWN_PATH=/a/gh_issue_7.md"}},
		{"the last --env wins", []string{"ISSUE_NUMBER=1", "ISSUE_NUMBER=2"}, map[string]string{"ISSUE_NUMBER": "7"}, []string{
			"ISSUE_MARKDOWN_FILENAME=gh_issue_2.md", "ISSUE_MARKDOWN_DIR=/a", "ISSUE_MARKDOWN_PATH=/a/gh_issue_2.md"}},
		{"one given is kept", []string{"ISSUE_NUMBER=3", "ISSUE_MARKDOWN_DIR=/mine"}, nil, []string{
			"ISSUE_MARKDOWN_FILENAME=gh_issue_3.md", "ISSUE_MARKDOWN_PATH=/a/gh_issue_3.md"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := orchRun(afero.NewMemMapFs(), &config.Workflow{})
			x.opts.Invocation.Env = tt.inv
			if tt.environ != nil {
				x.environ = tt.environ
			}
			if got := x.issueEnv("/a"); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("issueEnv = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLastItemKey(t *testing.T) {
	fs := afero.NewMemMapFs()
	src := "steps:\n" +
		"  - {id: plain, agent: a, prompt: p.md}\n" +
		"  - {id: loop, agent: a, prompt: p.md, loop: {items: [1, 2]}}\n" +
		"  - {id: empty, agent: a, prompt: p.md, loop: {items: []}}\n"
	if err := afero.WriteFile(fs, "/r/w.yaml", []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	wf, err := config.LoadWith(fs, "/r/w.yaml", config.Options{Repo: "/r", Orchestrator: config.OrchestratorOptions{Wrapper: "w.sh"}})
	if err != nil {
		t.Fatal(err)
	}
	x := orchRun(fs, wf)
	x.st.Steps[keytest.K("loop")] = &core.StepState{Items: []core.Item{{Key: "0"}, {Key: "a-b"}}}
	x.st.Steps[keytest.K("empty")] = &core.StepState{}
	for key, want := range map[string]string{"plain": "plain", "loop": "loop[a-b].loop_item", "empty": "empty", "nothing": "nothing"} {
		if got := x.lastItemKey(keytest.K(key)); got != keytest.K(want) {
			t.Errorf("lastItemKey(%s) = %s, want %s", key, got, want)
		}
	}
}
