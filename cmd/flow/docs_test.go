package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"
)

// The documentation is tested: README.md and every page of docs/ (but
// the generated references) mark each of their examples with an HTML
// comment that says how it is checked, and TestReadme and TestDocs run
// them. The markers:
//
//	<!-- test: new [copy=DIR,...] [files=ARCHIVE.txtar] [path=DIR,...] [git] -->
//	    starts a fresh repository for the examples after it: copy copies
//	    files or directories of this repository into it, at the same
//	    paths; files writes the files of a txtar archive (its script is
//	    not run); path puts directories of this repository first on
//	    PATH; git makes it a git repository with one commit. A file starts
//	    with "new copy=workflows".
//	<!-- test: setup
//	    shell commands -->
//	    runs commands in the repository, out of the reader's sight.
//	<!-- test: file PATH [append] -->
//	    the next code block is written to PATH in the repository, or
//	    appended to it.
//	<!-- test: run [unordered] [env=NAME=VALUE,...] -->
//	    the next code block is a transcript: each "$ command" line is run
//	    with sh in the repository and what it prints must be the lines
//	    under it (see normalizeTranscript), "..." standing for any number
//	    of lines; unordered compares the lines in any order, and counts
//	    of what has finished ("(2/3)") by their totals.
//	<!-- test: sh -->
//	    the next code block is a script that must succeed.
//	<!-- test: excerpt FILE -->
//	    the next code block is an excerpt of FILE of this repository (or
//	    of the file NAME of a txtar archive, ARCHIVE.txtar/NAME): its
//	    lines are FILE's, in order, comments and blanks aside, "..."
//	    standing for what is left out.
//	<!-- test: actions -->
//	    the next code block is the GitHub Actions example
//	    (TestDocsActions).
//	<!-- test: skip REASON -->
//	    the next code block is not checked, for the reason given.
//
// Every transcript (a block whose first line starts with "$ ") and every
// YAML or HCL block must have a marker: an example nobody runs drifts.

// docMarker is one test marker of a Markdown file.
type docMarker struct {
	verb, args string
	// script is the body of a setup marker.
	script string
	line   int
}

// docItem is a marker, with the code block it applies to.
type docItem struct {
	docMarker
	// block is the code block after a marker that takes one.
	block *docBlock
}

// docBlock is one fenced code block of a Markdown file.
type docBlock struct {
	lang string
	body []string
	// line is the line of the opening fence.
	line int
}

// blockVerbs are the markers that apply to the next code block.
var blockVerbs = map[string]bool{"file": true, "run": true, "sh": true, "excerpt": true, "actions": true, "skip": true}

// parseDoc reads the markers and code blocks of a Markdown file. It
// reports a block that needs a marker and has none, and a marker that
// is not followed by its block.
func parseDoc(name string, src []byte) (items []docItem, problems []string) {
	var (
		pending *docItem
		fence   string
		cur     *docBlock
		setup   *docItem
	)
	sc := bufio.NewScanner(bytes.NewReader(src))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if setup != nil {
			if body, ok := strings.CutSuffix(line, "-->"); ok {
				setup.script += body
				items = append(items, *setup)
				setup = nil
			} else {
				setup.script += line + "\n"
			}
			continue
		}
		if cur != nil {
			if strings.TrimSpace(line) == fence {
				if needsMarker(cur) && (pending == nil || pending.block != nil) {
					problems = append(problems, fmt.Sprintf("%s:%d: a %s without a test marker: add <!-- test: run --> (or excerpt, file, skip REASON) before it", name, cur.line, blockKind(cur)))
				}
				if pending != nil {
					pending.block = cur
					items = append(items, *pending)
					pending = nil
				}
				cur = nil
				continue
			}
			cur.body = append(cur.body, line)
			continue
		}
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			fence = strings.TrimRight(trimmed[:strings.IndexFunc(trimmed+"x", func(r rune) bool { return r != '`' })], " ")
			cur = &docBlock{lang: strings.TrimSpace(strings.TrimLeft(trimmed, "`")), line: n}
			continue
		}
		rest, ok := strings.CutPrefix(trimmed, "<!-- test:")
		if !ok {
			continue
		}
		if pending != nil {
			problems = append(problems, fmt.Sprintf("%s:%d: marker %q has no code block after it", name, pending.line, pending.verb))
			pending = nil
		}
		m := docMarker{line: n}
		if body, ok := strings.CutSuffix(rest, "-->"); ok {
			m.verb, m.args, _ = strings.Cut(strings.TrimSpace(body), " ")
		} else {
			m.verb, m.args, _ = strings.Cut(strings.TrimSpace(rest), " ")
		}
		switch {
		case m.verb == "setup" && !strings.HasSuffix(rest, "-->"):
			setup = &docItem{docMarker: m}
		case m.verb == "new" || m.verb == "setup":
			items = append(items, docItem{docMarker: m})
		case blockVerbs[m.verb]:
			pending = &docItem{docMarker: m}
		default:
			problems = append(problems, fmt.Sprintf("%s:%d: unknown test marker %q", name, n, m.verb))
		}
	}
	if pending != nil {
		problems = append(problems, fmt.Sprintf("%s:%d: marker %q has no code block after it", name, pending.line, pending.verb))
	}
	return items, problems
}

// needsMarker reports whether a code block is an example that must be
// checked: a transcript, or YAML or HCL.
func needsMarker(b *docBlock) bool {
	switch b.lang {
	case "yaml", "yml", "hcl":
		return true
	}
	return len(b.body) > 0 && strings.HasPrefix(b.body[0], "$ ")
}

func blockKind(b *docBlock) string {
	if len(b.body) > 0 && strings.HasPrefix(b.body[0], "$ ") {
		return "transcript"
	}
	return b.lang + " block"
}

// TestReadme runs the examples of README.md.
func TestReadme(t *testing.T) {
	testDocFiles(t, []string{"README.md"})
}

// TestDocs runs the examples of every page of docs/ but the generated
// references.
func TestDocs(t *testing.T) {
	var files []string
	err := filepath.WalkDir("../../docs", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("../..", path)
		if d.IsDir() && (rel == filepath.Join("docs", "reference", "cli") || rel == filepath.Join("docs", "reference", "man")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") && rel != filepath.Join("docs", "reference", "workflow.md") {
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("found %d pages in docs/: %v", len(files), files)
	}
	testDocFiles(t, files)
}

// docExample is a run of items that share one repository.
type docExample struct {
	file  string
	start docMarker
	items []docItem
}

func testDocFiles(t *testing.T, files []string) {
	if runtime.GOOS != "linux" {
		t.Skip("the transcripts kill a runner, whose sessions die with it only on Linux")
	}
	bin := flowBinary(t)
	for _, file := range files {
		src, err := os.ReadFile(filepath.Join("../..", file))
		if err != nil {
			t.Fatal(err)
		}
		items, problems := parseDoc(file, src)
		for _, p := range problems {
			t.Error(p)
		}
		var examples []*docExample
		cur := &docExample{file: file, start: docMarker{verb: "new", args: "copy=workflows", line: 1}}
		for _, it := range items {
			if it.verb == "new" {
				if len(cur.items) > 0 {
					examples = append(examples, cur)
				}
				cur = &docExample{file: file, start: it.docMarker}
				continue
			}
			cur.items = append(cur.items, it)
		}
		if len(cur.items) > 0 {
			examples = append(examples, cur)
		}
		for _, ex := range examples {
			t.Run(fmt.Sprintf("%s:%d", file, ex.start.line), func(t *testing.T) {
				t.Parallel()
				runDocExample(t, bin, ex)
			})
		}
	}
}

// runDocExample makes the example's repository and runs its items in
// order.
func runDocExample(t *testing.T, bin string, ex *docExample) {
	repo := t.TempDir()
	// Resolved, so that the repository's path in what flow prints is
	// the one normalizeTranscript replaces.
	repo, err := filepath.EvalSymlinks(repo)
	if err != nil {
		t.Fatal(err)
	}
	at := func(line int) string { return fmt.Sprintf("%s:%d", ex.file, line) }
	paths := []string{bin}
	git := false
	for _, arg := range strings.Fields(ex.start.args) {
		key, val, _ := strings.Cut(arg, "=")
		switch key {
		case "copy":
			for _, p := range strings.Split(val, ",") {
				copyTree(t, filepath.Join("../..", p), filepath.Join(repo, p))
			}
		case "files":
			ar, err := txtar.ParseFile(filepath.Join("../..", val))
			if err != nil {
				t.Fatalf("%s: %v", at(ex.start.line), err)
			}
			for _, f := range ar.Files {
				writeFile(t, filepath.Join(repo, f.Name), f.Data)
			}
		case "path":
			for _, p := range strings.Split(val, ",") {
				abs, err := filepath.Abs(filepath.Join("../..", p))
				if err != nil {
					t.Fatal(err)
				}
				paths = append(paths, abs)
			}
		case "git":
			git = true
		default:
			t.Fatalf("%s: unknown option %q of test: new", at(ex.start.line), arg)
		}
	}
	env := []string{
		"PATH=" + strings.Join(append(paths, os.Getenv("PATH")), string(os.PathListSeparator)),
		"HOME=" + repo, "TMPDIR=" + os.TempDir(), "USER=tester", "GORACE=atexit_sleep_ms=0",
		"GIT_AUTHOR_NAME=tester", "GIT_AUTHOR_EMAIL=tester@example.com",
		"GIT_COMMITTER_NAME=tester", "GIT_COMMITTER_EMAIL=tester@example.com",
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
	}
	if git {
		shell(t, repo, env, at(ex.start.line), "git init -q -b main && git add -A && git commit -q -m 'the app'")
	}
	for _, it := range ex.items {
		switch it.verb {
		case "setup":
			shell(t, repo, env, at(it.line), it.script)
		case "file":
			args := strings.Fields(it.args)
			if len(args) == 0 || len(args) > 2 || (len(args) == 2 && args[1] != "append") {
				t.Fatalf("%s: want test: file PATH [append]", at(it.line))
			}
			body := []byte(strings.Join(it.block.body, "\n") + "\n")
			path := filepath.Join(repo, args[0])
			if len(args) == 2 {
				old, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%s: %v", at(it.line), err)
				}
				body = append(old, body...)
			}
			writeFile(t, path, body)
		case "sh":
			shell(t, repo, env, at(it.block.line), strings.Join(it.block.body, "\n"))
		case "excerpt":
			checkExcerpt(t, at(it.block.line), strings.TrimSpace(it.args), it.block)
		case "run":
			steps, opts := transcriptOf(it)
			runTranscript(t, repo, append(slices.Clone(env), opts.env...), steps, ex.file, opts.unordered)
		case "actions", "skip":
			if it.verb == "skip" && strings.TrimSpace(it.args) == "" {
				t.Errorf("%s: test: skip without a reason", at(it.line))
			}
		}
	}
}

// shell runs a script in repo; it must succeed.
func shell(t *testing.T, repo string, env []string, at, script string) {
	t.Helper()
	c := exec.Command("sh", "-e", "-c", script)
	c.Dir, c.Env = repo, env
	if out, err := c.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s\n%s", at, err, script, out)
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// copyTree copies a file, or a directory and what it holds, keeping
// the modes of files.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		return os.WriteFile(to, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
}

// excerptComment is a comment at the end of a YAML or HCL line.
var excerptComment = regexp.MustCompile(`(^|\s)(#|//)(\s.*)?$`)

// excerptLine is a line of an excerpt or of its file as they are
// compared: without indentation or a comment.
func excerptLine(l string) string {
	return strings.TrimSpace(excerptComment.ReplaceAllString(l, ""))
}

// checkExcerpt checks that the lines of b are lines of file, in order:
// "..." alone on a line skips lines of the file, and within a line
// stands for any text.
func checkExcerpt(t *testing.T, at, file string, b *docBlock) {
	t.Helper()
	src, err := readExcerpted(file)
	if err != nil {
		t.Errorf("%s: excerpt of %s: %v", at, file, err)
		return
	}
	var lines []string
	for _, l := range strings.Split(string(src), "\n") {
		if l = excerptLine(l); l != "" {
			lines = append(lines, l)
		}
	}
	i := 0
	for n, l := range b.body {
		want := excerptLine(l)
		if want == "" || want == "..." {
			continue
		}
		re := regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(want), `\.\.\.`, ".*") + "$")
		for i < len(lines) && !re.MatchString(lines[i]) {
			i++
		}
		if i == len(lines) {
			t.Errorf("%s: line %d of the excerpt, %q, is not in %s (after the lines before it)", at, n+1, strings.TrimSpace(l), file)
			return
		}
		i++
	}
}

// readExcerpted reads the file an excerpt is taken from: a file of this
// repository, or a file of a txtar archive named ARCHIVE.txtar/NAME.
func readExcerpted(file string) ([]byte, error) {
	archive, name, ok := strings.Cut(file, ".txtar/")
	if !ok {
		return os.ReadFile(filepath.Join("../..", file))
	}
	ar, err := txtar.ParseFile(filepath.Join("../..", archive+".txtar"))
	if err != nil {
		return nil, err
	}
	for _, f := range ar.Files {
		if f.Name == name {
			return f.Data, nil
		}
	}
	return nil, fmt.Errorf("%s.txtar has no file %s", archive, name)
}

// transcriptStep is one command of a transcript and the output shown
// under it.
type transcriptStep struct {
	// cmd is the command as typed, without its comment; comment is the
	// comment after it (`  # while build runs`).
	cmd, comment string
	want         []string
	line         int
}

type transcriptOpts struct {
	unordered bool
	env       []string
}

// transcriptOf reads the commands and outputs of a transcript block.
func transcriptOf(it docItem) ([]transcriptStep, transcriptOpts) {
	var opts transcriptOpts
	for _, a := range strings.Fields(it.args) {
		switch {
		case a == "unordered":
			opts.unordered = true
		case strings.HasPrefix(a, "env="):
			opts.env = append(opts.env, strings.Split(strings.TrimPrefix(a, "env="), ",")...)
		}
	}
	var steps []transcriptStep
	for i, line := range it.block.body {
		n := it.block.line + 1 + i
		if cmd, ok := strings.CutPrefix(line, "$ "); ok {
			st := transcriptStep{cmd: cmd, line: n}
			if j := strings.Index(cmd, "  #"); j >= 0 {
				st.cmd, st.comment = strings.TrimSpace(cmd[:j]), strings.TrimSpace(cmd[j+3:])
			}
			steps = append(steps, st)
			continue
		}
		if len(steps) > 0 {
			steps[len(steps)-1].want = append(steps[len(steps)-1].want, line)
		}
	}
	return steps, opts
}

// The parts of a transcript's output that differ from run to run.
var (
	readmePaths     = regexp.MustCompile(`\S*/\.agents/`)
	readmeTimes     = regexp.MustCompile(`\b[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+(Z|[+-][0-9]{2}:[0-9]{2})`)
	readmeRunIDs    = regexp.MustCompile(`\b[0-9]{8}-[0-9]{6}-[0-9a-f]{6}\b`)
	readmeCommits   = regexp.MustCompile(`\b[0-9a-f]{12}([0-9a-f]{28})?\b`)
	readmeDurations = regexp.MustCompile(`\b[0-9]+(\.[0-9]+)?(ns|µs|ms|s|m|h)\b`)
	readmePIDs      = regexp.MustCompile(`(pid|group) [0-9]+`)
	readmeSpace     = regexp.MustCompile(`[ \t]+`)
	progressCount   = regexp.MustCompile(`\([0-9]+/([0-9]+)\)`)
)

// normalizeTranscript makes output comparable: the example's repository
// is shown as /src/app, and the run's directories, run ids made by flow,
// times, commits, durations, pids and process groups are replaced by
// placeholders, and runs of blanks (which tables align by the width of
// those) by one space.
func normalizeTranscript(repo string, lines []string) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		if repo != "" {
			l = strings.ReplaceAll(l, repo, "/src/app")
		}
		l = readmePaths.ReplaceAllString(l, "<repo>/.agents/")
		l = readmeTimes.ReplaceAllString(l, "<time>")
		l = readmeRunIDs.ReplaceAllString(l, "<run>")
		l = readmeCommits.ReplaceAllString(l, "<commit>")
		l = readmeDurations.ReplaceAllString(l, "<duration>")
		l = readmePIDs.ReplaceAllString(l, "$1 <n>")
		l = strings.TrimSpace(readmeSpace.ReplaceAllString(l, " "))
		out = append(out, l)
	}
	return out
}

// matchLines reports whether got is want, where a want line "..."
// stands for any number of lines.
func matchLines(got, want []string) bool {
	if len(want) == 0 {
		return len(got) == 0
	}
	if want[0] == "..." {
		for i := 0; i <= len(got); i++ {
			if matchLines(got[i:], want[1:]) {
				return true
			}
		}
		return false
	}
	return len(got) > 0 && got[0] == want[0] && matchLines(got[1:], want[1:])
}

// whileRuns reads a comment "while STEP runs": the command waits until
// that step of the run started in the background has started.
var whileRuns = regexp.MustCompile(`^while ([a-z0-9_-]+) runs$`)

// runIDFlag finds the run id a command names.
var runIDFlag = regexp.MustCompile(`--run-id (\S+)`)

// runTranscript runs the steps of one transcript in repo and compares
// what each command prints with what the page shows. As in an
// interactive shell, a command ending in & runs in the background,
// "kill -9 %1" kills the first of them, "wait" waits for them, and $?
// is the exit code of the command before; a comment "while STEP runs"
// makes the command wait until STEP of the background run has started,
// as a person reading the screen would.
func runTranscript(t *testing.T, repo string, env []string, steps []transcriptStep, file string, unordered bool) {
	t.Helper()
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
				t.Fatalf("%s:%d: %v", file, st.line, err)
			}
			bg = append(bg, c)
			if m := runIDFlag.FindStringSubmatch(cmd); m != nil {
				bgRun = m[1]
			}
			continue
		case cmd == "kill -9 %1":
			if len(bg) == 0 {
				t.Fatalf("%s:%d: no background command to kill", file, st.line)
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
				t.Fatalf("%s:%d: %v", file, st.line, err)
			default:
				status = 0
			}
			got = out.Bytes()
		}
		gotLines := strings.Split(strings.TrimRight(string(got), "\n"), "\n")
		if len(got) == 0 {
			gotLines = nil
		}
		g, w := normalizeTranscript(repo, gotLines), normalizeTranscript("", st.want)
		if unordered {
			// Lines of things in flight come in any order, and so do
			// the counts of what has finished: "(2/3)".
			for _, ls := range [][]string{g, w} {
				for i, l := range ls {
					ls[i] = progressCount.ReplaceAllString(l, "(<n>/$1)")
				}
				slices.Sort(ls)
			}
		}
		if !matchLines(g, w) {
			t.Errorf("%s:%d: $ %s\nprints:\n%s\nthe page shows:\n%s", file, st.line, st.cmd, strings.Join(g, "\n"), strings.Join(w, "\n"))
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

// TestParseDoc checks the markers' reading: a transcript or a workflow
// without a marker is reported, and a marker takes the block after it.
func TestParseDoc(t *testing.T) {
	tests := []struct {
		name, src string
		verbs     []string
		problems  int
	}{
		{"unmarked transcript", "```\n$ flow run x\n```\n", nil, 1},
		{"unmarked yaml", "```yaml\nname: x\n```\n", nil, 1},
		{"plain block", "```\nflow run x\n```\n", nil, 0},
		{"marked", "<!-- test: run -->\n```\n$ flow run x\n```\n", []string{"run"}, 0},
		{"marker without block", "<!-- test: run -->\ntext\n<!-- test: sh -->\n```sh\ntrue\n```\n", []string{"sh"}, 1},
		{"setup", "<!-- test: setup\ngit init\n-->\n<!-- test: new git -->\n", []string{"setup", "new"}, 0},
		{"unknown", "<!-- test: runs -->\n", nil, 1},
		{"four backticks", "<!-- test: skip a prompt -->\n````\n```\n$ x\n```\n````\n", []string{"skip"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			items, problems := parseDoc("x.md", []byte(tt.src))
			var verbs []string
			for _, it := range items {
				verbs = append(verbs, it.verb)
			}
			if !slices.Equal(verbs, tt.verbs) || len(problems) != tt.problems {
				t.Errorf("got %v and %q, want %v and %d problems", verbs, problems, tt.verbs, tt.problems)
			}
		})
	}
	if !matchLines([]string{"a", "b", "c"}, []string{"a", "...", "c"}) || matchLines([]string{"a", "b"}, []string{"a", "c"}) || !matchLines([]string{"a"}, []string{"a", "..."}) {
		t.Error("matchLines: ... does not stand for any number of lines")
	}
}

// mdLink is a link of Markdown text: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// headingSlug is the anchor GitHub gives a heading: lower case, spaces
// as hyphens, punctuation but hyphens and underscores left out.
func headingSlug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestDocsLinks checks the links of README.md and docs/ between the
// repository's files: the file each names exists, and so does the
// heading its #anchor names.
func TestDocsLinks(t *testing.T) {
	files := []string{"README.md", filepath.Join("bench", "README.md")}
	err := filepath.WalkDir("../../docs", func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, _ := filepath.Rel("../..", path)
			files = append(files, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(file string) map[string]bool {
		if a, ok := anchors[file]; ok {
			return a
		}
		a := map[string]bool{}
		b, _ := os.ReadFile(filepath.Join("../..", file))
		inFence := false
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), "```") {
				inFence = !inFence
			}
			if h, ok := strings.CutPrefix(l, "#"); ok && !inFence {
				a[headingSlug(strings.TrimLeft(h, "#"))] = true
			}
		}
		anchors[file] = a
		return a
	}
	for _, file := range files {
		b, err := os.ReadFile(filepath.Join("../..", file))
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(b), "\n") {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				to := file
				if path != "" {
					to = filepath.Join(filepath.Dir(file), path)
					if _, err := os.Stat(filepath.Join("../..", to)); err != nil {
						t.Errorf("%s:%d: link to %s: no such file", file, n+1, target)
						continue
					}
				}
				if anchor != "" && strings.HasSuffix(to, ".md") && !anchorsOf(to)[anchor] {
					t.Errorf("%s:%d: link to %s: %s has no heading #%s", file, n+1, target, to, anchor)
				}
			}
		}
	}
}
