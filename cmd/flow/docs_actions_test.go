package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"
	"go.yaml.in/yaml/v3"
)

// actionsExample returns the GitHub Actions example of docs/ci.md: the
// code block after its <!-- test: actions --> marker.
func actionsExample(t *testing.T) []byte {
	t.Helper()
	const file = "docs/ci.md"
	src, err := os.ReadFile(filepath.Join("../..", file))
	if err != nil {
		t.Fatal(err)
	}
	items, _ := parseDoc(file, src)
	for _, it := range items {
		if it.verb == "actions" {
			return []byte(strings.Join(it.block.body, "\n") + "\n")
		}
	}
	t.Fatalf("%s has no <!-- test: actions --> block: the GitHub Actions example is gone", file)
	return nil
}

// TestDocsActionsLint lints the GitHub Actions example with actionlint,
// so the workflow users copy stays one GitHub accepts.
func TestDocsActionsLint(t *testing.T) {
	linter, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	problems, err := linter.Lint("<stdin>", actionsExample(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("docs/ci.md GitHub Actions example:%d:%d: %s [%s]", p.Line, p.Column, p.Message, p.Kind)
	}
}

// ghWorkflow is what the test reads of a GitHub Actions workflow.
type ghWorkflow struct {
	Jobs yaml.Node `yaml:"jobs"`
}

type ghJob struct {
	Needs   string            `yaml:"needs"`
	If      string            `yaml:"if"`
	Outputs map[string]string `yaml:"outputs"`
	Steps   []ghStep          `yaml:"steps"`
}

type ghStep struct {
	ID   string            `yaml:"id"`
	If   string            `yaml:"if"`
	Uses string            `yaml:"uses"`
	With map[string]string `yaml:"with"`
	Env  map[string]string `yaml:"env"`
	Run  string            `yaml:"run"`
}

// featureWorkflow is the workflows/feature.yaml the example runs: a
// coder that writes a file, a human approval, and a step after it that
// needs the coder's work in its checkout.
const featureWorkflow = `name: feature
agents:
  coder:
    run: echo "hello from the coder" > greeting.txt
steps:
  - id: code
    agent: coder
    prompt: Write greeting.txt.
  - id: manual_approval
    human:
      message: Ship it?
  - id: ship
    run: grep -x "hello from the coder" greeting.txt
`

// TestDocsActions runs the GitHub Actions example of docs/ci.md end to
// end, as GitHub would: its jobs in order, each in a clone of the same
// repository with a temporary directory of its own ($RUNNER_TEMP), its
// steps' scripts run with bash -eo pipefail and GitHub's files
// ($GITHUB_OUTPUT, $GITHUB_STEP_SUMMARY), the artifacts one job uploads
// handed to the next job's downloads. flow stands in for the go install
// and setup steps; no secret is set. The run stops at its approval in the
// first job and completes in the second, with the first job's work.
func TestDocsActions(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the example runs on ubuntu-latest")
	}
	for _, tool := range []string{"git", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed", tool)
		}
	}
	var wf ghWorkflow
	if err := yaml.Unmarshal(actionsExample(t), &wf); err != nil {
		t.Fatal(err)
	}
	bin := flowBinary(t)
	root := t.TempDir()
	origin := filepath.Join(root, "origin")
	baseEnv := []string{
		"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + root, "TMPDIR=" + os.TempDir(), "USER=runner", "GORACE=atexit_sleep_ms=0",
		"GIT_AUTHOR_NAME=tester", "GIT_AUTHOR_EMAIL=tester@example.com",
		"GIT_COMMITTER_NAME=tester", "GIT_COMMITTER_EMAIL=tester@example.com",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"CI=true", "GITHUB_ACTIONS=true", "GITHUB_ACTOR=alice",
	}
	writeFile(t, filepath.Join(origin, "workflows", "feature.yaml"), []byte(featureWorkflow))
	writeFile(t, filepath.Join(origin, "README"), []byte("an app\n"))
	shell(t, origin, baseEnv, "origin", "git init -q -b main && git add -A && git commit -q -m 'the app'")

	artifacts := filepath.Join(root, "artifacts")
	outputs := map[string]map[string]string{} // job -> its outputs
	ran := map[string]bool{}
	for i := range len(wf.Jobs.Content) / 2 {
		name := wf.Jobs.Content[2*i].Value
		var job ghJob
		if err := wf.Jobs.Content[2*i+1].Decode(&job); err != nil {
			t.Fatal(err)
		}
		ctx := &ghContext{temp: filepath.Join(root, name+"-temp"), needs: outputs, steps: map[string]map[string]string{}}
		if job.If != "" && !ctx.cond(t, job.If) {
			t.Fatalf("job %s did not run: %s", name, job.If)
		}
		ran[name] = true
		work := filepath.Join(root, name)
		if err := os.MkdirAll(ctx.temp, 0o755); err != nil {
			t.Fatal(err)
		}
		env := append(baseEnv[:len(baseEnv):len(baseEnv)], "RUNNER_TEMP="+ctx.temp,
			"GITHUB_WORKSPACE="+work)
		for n, st := range job.Steps {
			at := fmt.Sprintf("job %s, step %d", name, n+1)
			if st.If != "" && !ctx.cond(t, st.If) {
				continue
			}
			switch {
			case strings.HasPrefix(st.Uses, "actions/checkout@"):
				shell(t, root, env, at, "git clone -q origin "+name)
			case strings.HasPrefix(st.Uses, "actions/setup-go@"), strings.HasPrefix(st.Run, "go install "):
				// flow is on PATH already.
			case strings.HasPrefix(st.Uses, "actions/upload-artifact@"):
				for _, p := range strings.Fields(ctx.expand(t, st.With["path"])) {
					src := p
					if !filepath.IsAbs(src) {
						src = filepath.Join(work, p)
					}
					if _, err := os.Stat(src); err != nil {
						t.Fatalf("%s: upload of %s: %v", at, p, err)
					}
					dst := filepath.Join(artifacts, st.With["name"])
					if info, _ := os.Stat(src); !info.IsDir() {
						dst = filepath.Join(dst, filepath.Base(src))
					}
					copyTree(t, src, dst)
				}
			case strings.HasPrefix(st.Uses, "actions/download-artifact@"):
				dst := ctx.expand(t, st.With["path"])
				if !filepath.IsAbs(dst) {
					dst = filepath.Join(work, dst)
				}
				copyTree(t, filepath.Join(artifacts, st.With["name"]), dst)
			case st.Run != "":
				ghOut, summary := filepath.Join(ctx.temp, fmt.Sprintf("output-%d", n)), filepath.Join(ctx.temp, "summary")
				writeFile(t, ghOut, nil)
				stepEnv := append(env[:len(env):len(env)], "GITHUB_OUTPUT="+ghOut, "GITHUB_STEP_SUMMARY="+summary)
				for k, v := range st.Env {
					stepEnv = append(stepEnv, k+"="+ctx.expand(t, v))
				}
				c := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", st.Run)
				c.Dir, c.Env = work, stepEnv
				out, err := c.CombinedOutput()
				if err != nil {
					t.Fatalf("%s: %v\n%s\n%s", at, err, st.Run, out)
				}
				if st.ID != "" {
					ctx.steps[st.ID] = readGitHubOutput(t, ghOut)
				}
			default:
				t.Fatalf("%s: the test does not know how to run %q", at, st.Uses)
			}
		}
		outputs[name] = map[string]string{}
		for k, v := range job.Outputs {
			outputs[name][k] = ctx.expand(t, v)
		}
	}

	// The first job stopped at the approval and handed the run on; its
	// patch holds the work and nothing the hand-off wrote.
	if outputs["run"]["exit_code"] != "3" || outputs["run"]["run_id"] == "" {
		t.Fatalf("job run's outputs: %v, want exit_code 3 and a run id", outputs["run"])
	}
	patch, err := os.ReadFile(filepath.Join(artifacts, "flow-handoff", "work.patch"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(patch, []byte("greeting.txt")) {
		t.Errorf("work.patch holds no greeting.txt:\n%s", patch)
	}
	for _, f := range []string{"run.tar.gz", "flow-junit.xml", "work.patch"} {
		if bytes.Contains(patch, []byte(f)) {
			t.Errorf("work.patch holds %s, which job approve would find already there:\n%s", f, patch)
		}
	}
	if _, err := os.Stat(filepath.Join(artifacts, "flow-junit", "flow-junit.xml")); err != nil {
		t.Errorf("the JUnit report was not uploaded: %v", err)
	}
	// The second job approved and resumed: the run completed there, and
	// its last step found the first job's work.
	if !ran["approve"] {
		t.Fatal("job approve did not run")
	}
	c := exec.Command(filepath.Join(bin, "flow"), "status", outputs["run"]["run_id"])
	c.Dir, c.Env = filepath.Join(root, "approve"), baseEnv
	out, err := c.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("status completed (exit 0)")) {
		t.Errorf("the run in job approve: %v\n%s", err, out)
	}
}

// ghContext is what ${{ }} expressions and if: conditions of the
// example read.
type ghContext struct {
	temp  string
	needs map[string]map[string]string
	steps map[string]map[string]string
}

var ghExpr = regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)

// value is the value of one expression of the example: runner.temp,
// steps.ID.outputs.NAME, needs.JOB.outputs.NAME, or a secret (never set
// here).
func (c *ghContext) value(t *testing.T, e string) string {
	t.Helper()
	parts := strings.Split(e, ".")
	switch {
	case e == "runner.temp":
		return c.temp
	case len(parts) == 4 && parts[0] == "steps" && parts[2] == "outputs":
		return c.steps[parts[1]][parts[3]]
	case len(parts) == 4 && parts[0] == "needs" && parts[2] == "outputs":
		return c.needs[parts[1]][parts[3]]
	case len(parts) == 2 && parts[0] == "secrets":
		return ""
	}
	t.Fatalf("the test does not know the expression %q", e)
	return ""
}

// expand replaces the ${{ }} expressions in s.
func (c *ghContext) expand(t *testing.T, s string) string {
	return ghExpr.ReplaceAllStringFunc(s, func(m string) string {
		return c.value(t, ghExpr.FindStringSubmatch(m)[1])
	})
}

// cond evaluates an if: condition: always(), failure() (no step before
// it failed, or the test would have stopped), or X == 'literal'.
func (c *ghContext) cond(t *testing.T, s string) bool {
	t.Helper()
	s = strings.TrimSpace(s)
	switch s {
	case "always()":
		return true
	case "failure()":
		return false
	}
	left, right, ok := strings.Cut(s, "==")
	if !ok {
		t.Fatalf("the test does not know the condition %q", s)
	}
	return c.value(t, strings.TrimSpace(left)) == strings.Trim(strings.TrimSpace(right), "'")
}

// readGitHubOutput reads the name=value lines a step wrote to
// $GITHUB_OUTPUT.
func readGitHubOutput(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			out[k] = v
		}
	}
	return out
}
