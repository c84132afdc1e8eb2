package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// transcriptStep is one command of a README transcript and the output
// shown under it.
type transcriptStep struct {
	// cmd is the command as typed, without its comment; comment is the
	// comment after it (`  # while build runs`).
	cmd, comment string
	want         []string
	line         int
}

// readmeTranscripts returns the shell transcripts (fenced blocks whose
// first line starts with "$ ") in the section of README.md titled
// section.
func readmeTranscripts(t *testing.T, readme []byte, section string) [][]transcriptStep {
	t.Helper()
	var (
		out      [][]transcriptStep
		cur      []transcriptStep
		in, keep bool
		inFence  bool
	)
	sc := bufio.NewScanner(bytes.NewReader(readme))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "## ") {
			in = line == "## "+section
			continue
		}
		if !in {
			continue
		}
		if strings.HasPrefix(line, "```") {
			if inFence && keep {
				out = append(out, cur)
			}
			inFence, keep, cur = !inFence, false, nil
			continue
		}
		if !inFence {
			continue
		}
		if cmd, ok := strings.CutPrefix(line, "$ "); ok {
			keep = true
			st := transcriptStep{cmd: cmd, line: n}
			if i := strings.Index(cmd, "  #"); i >= 0 {
				st.cmd, st.comment = strings.TrimSpace(cmd[:i]), strings.TrimSpace(cmd[i+3:])
			}
			cur = append(cur, st)
			continue
		}
		if len(cur) > 0 {
			cur[len(cur)-1].want = append(cur[len(cur)-1].want, line)
		}
	}
	return out
}

// The parts of a transcript's output that differ from run to run.
var (
	readmePaths     = regexp.MustCompile(`\S*/\.agents/`)
	readmeDurations = regexp.MustCompile(`\b[0-9]+(\.[0-9]+)?(ns|µs|ms|s|m|h)\b`)
	readmePIDs      = regexp.MustCompile(`(pid|group) [0-9]+`)
	readmeSpace     = regexp.MustCompile(`[ \t]+`)
)

// normalizeTranscript makes output comparable: repositories, durations,
// pids and process groups are replaced by placeholders, and runs of blanks (which
// tables align by the width of those) by one space.
func normalizeTranscript(lines []string) string {
	var b strings.Builder
	for _, l := range lines {
		l = readmePaths.ReplaceAllString(l, "<repo>/.agents/")
		l = readmeDurations.ReplaceAllString(l, "<duration>")
		l = readmePIDs.ReplaceAllString(l, "$1 <n>")
		l = strings.TrimSpace(readmeSpace.ReplaceAllString(l, " "))
		b.WriteString(l + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

// whileRuns reads a comment "while STEP runs": the command waits until
// that step of the run started in the background has started.
var whileRuns = regexp.MustCompile(`^while ([a-z0-9_-]+) runs$`)

// runIDFlag finds the run id a command names.
var runIDFlag = regexp.MustCompile(`--run-id (\S+)`)

// TestReadmeExamples runs the transcripts of the README's "Operating
// runs" section against the shipped workflows/examples, in a fresh
// repository, and compares what each command prints with what the README
// shows, with paths, durations and pids normalized. As in an
// interactive shell, a command ending in & runs in the background,
// "kill -9 %1" kills the first of them, "wait" waits for them, and $? is
// the exit code of the command before; a comment "while STEP runs" makes
// the command wait until STEP of the background run has started, as a
// person reading the screen would.
func TestReadmeExamples(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the transcripts kill a runner, whose sessions die with it only on Linux")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	transcripts := readmeTranscripts(t, readme, "Operating runs")
	if len(transcripts) < 3 {
		t.Fatalf("found %d transcripts in the README's Operating runs section, want the 3 of approving, pausing and recovering", len(transcripts))
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "flow")); err != nil {
		t.Fatal(err)
	}
	for _, steps := range transcripts {
		t.Run(fmt.Sprintf("line %d", steps[0].line), func(t *testing.T) {
			repo := t.TempDir()
			examples, _ := filepath.Glob("../../workflows/examples/*.yaml")
			if len(examples) == 0 {
				t.Fatal("no workflows/examples")
			}
			for _, ex := range examples {
				b, err := os.ReadFile(ex)
				if err != nil {
					t.Fatal(err)
				}
				dst := filepath.Join(repo, "workflows", "examples", filepath.Base(ex))
				if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(dst, b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			env := []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + repo,
				"TMPDIR=" + os.TempDir(), "USER=tester", "GORACE=atexit_sleep_ms=0"}
			runTranscript(t, repo, env, steps)
		})
	}
}

// runTranscript runs the steps of one transcript in repo.
func runTranscript(t *testing.T, repo string, env []string, steps []transcriptStep) {
	var (
		bg     []*exec.Cmd
		bgRun  string
		status int
	)
	defer func() {
		for _, c := range bg {
			if c.ProcessState == nil {
				_ = c.Process.Kill()
				_ = c.Wait()
			}
		}
	}()
	sh := func(cmd string) *exec.Cmd {
		c := exec.Command("sh", "-c", fmt.Sprintf("(exit %d); %s", status, cmd))
		c.Dir, c.Env = repo, env
		return c
	}
	for _, st := range steps {
		if m := whileRuns.FindStringSubmatch(st.comment); m != nil {
			waitStarted(t, filepath.Join(repo, ".agents", "runs", bgRun, "events.jsonl"), m[1])
		}
		cmd := st.cmd
		var got []byte
		switch {
		case strings.HasSuffix(cmd, "&"):
			// exec: the process is the command itself, as a shell's
			// job would be, so that kill -9 %1 kills it.
			c := sh("exec " + strings.TrimSpace(strings.TrimSuffix(cmd, "&")))
			if err := c.Start(); err != nil {
				t.Fatalf("README.md:%d: %v", st.line, err)
			}
			bg = append(bg, c)
			if m := runIDFlag.FindStringSubmatch(cmd); m != nil {
				bgRun = m[1]
			}
			continue
		case cmd == "kill -9 %1":
			if len(bg) == 0 {
				t.Fatalf("README.md:%d: no background command to kill", st.line)
			}
			_ = bg[0].Process.Signal(syscall.SIGKILL)
			_ = bg[0].Wait()
			status = 0
		case cmd == "wait" || strings.HasPrefix(cmd, "wait;") || strings.HasPrefix(cmd, "wait &&"):
			for _, c := range bg {
				if c.ProcessState == nil {
					_ = c.Wait()
				}
			}
			rest := strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(cmd, "wait"), ";"), " &&")
			if strings.TrimSpace(rest) == "" {
				break
			}
			cmd = rest
			fallthrough
		default:
			c := sh(cmd)
			var out bytes.Buffer
			c.Stdout, c.Stderr = &out, &out
			err := c.Run()
			var ee *exec.ExitError
			switch {
			case errors.As(err, &ee):
				status = ee.ExitCode()
			case err != nil:
				t.Fatalf("README.md:%d: %v", st.line, err)
			default:
				status = 0
			}
			got = out.Bytes()
		}
		gotLines := strings.Split(strings.TrimRight(string(got), "\n"), "\n")
		if len(got) == 0 {
			gotLines = nil
		}
		if g, w := normalizeTranscript(gotLines), normalizeTranscript(st.want); g != w {
			t.Errorf("README.md:%d: $ %s\nprints:\n%s\nthe README shows:\n%s", st.line, st.cmd, g, w)
		}
	}
}

// waitStarted waits until the event log at path records that step's
// session started (its process is running) and then for its first
// output, for at most two seconds: an example that prints does so once
// it has started what the transcript relies on (long.yaml's build, its
// background sleep), one that prints nothing goes on after the wait.
func waitStarted(t *testing.T, path, step string) {
	t.Helper()
	// No deadline: a step that never starts is bounded by the test
	// binary's -timeout.
	var began time.Time
	for {
		b, _ := os.ReadFile(path)
		for _, line := range bytes.Split(b, []byte("\n")) {
			var e struct {
				Type, Step string
				Data       struct {
					LogPath string `json:"log_path"`
				}
			}
			if json.Unmarshal(line, &e) != nil || e.Type != "session_started" || e.Step != step {
				continue
			}
			if began.IsZero() {
				began = time.Now()
			}
			if _, err := os.Stat(e.Data.LogPath); err == nil || time.Since(began) > 2*time.Second {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}
