package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/termsafe"
	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/local"
	"github.com/flow-run/flow/runner/ops"
	"github.com/flow-run/flow/runner/record"
)

// ciMode is how flow shows itself to a CI service (docs/ci.md).
type ciMode string

// The CI modes: off (a terminal or a plain pipe), plain (live session
// output, one line per change), github (GitHub Actions workflow
// commands) and gitlab (GitLab collapsible sections).
const (
	ciOff    ciMode = "off"
	ciPlain  ciMode = "plain"
	ciGitHub ciMode = "github"
	ciGitLab ciMode = "gitlab"
)

// detectCI decides the CI mode: the --ci flag's value when set, else
// GitHub Actions (GITHUB_ACTIONS=true), else GitLab CI (GITLAB_CI=true),
// else plain when CI is truthy, else off. A flag value that names no
// mode is a usage error.
func detectCI(flag string, getenv func(string) string) (ciMode, error) {
	switch m := ciMode(strings.ToLower(strings.TrimSpace(flag))); m {
	case ciOff, ciPlain, ciGitHub, ciGitLab:
		return m, nil
	case "":
	default:
		return ciOff, ops.Usage("--ci=%s: want github, gitlab, plain or off", flag)
	}
	switch {
	case strings.EqualFold(strings.TrimSpace(getenv("GITHUB_ACTIONS")), "true"):
		return ciGitHub, nil
	case strings.EqualFold(strings.TrimSpace(getenv("GITLAB_CI")), "true"):
		return ciGitLab, nil
	case ciTruthy(getenv("CI")):
		return ciPlain, nil
	}
	return ciOff, nil
}

// ciMode returns the app's CI mode; a bad --ci value, refused before
// any command runs, counts as off.
func (a *app) ciMode() ciMode {
	m, err := detectCI(a.ciFlag, a.svc.Getenv)
	if err != nil {
		return ciOff
	}
	return m
}

// ciPath names file as a CI service wants it in an annotation or a
// report: relative to the checkout the variable root names
// ($GITHUB_WORKSPACE, $CI_PROJECT_DIR), with slashes. A file outside it,
// or with root unset, keeps the name it was given.
func (a *app) ciPath(file, root string) string {
	ws := a.svc.Getenv(root)
	if ws == "" || file == "" {
		return file
	}
	abs := file
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(a.svc.Dir, file)
	}
	rel, err := filepath.Rel(filepath.Clean(ws), abs)
	if err != nil || !filepath.IsLocal(rel) {
		return file
	}
	return filepath.ToSlash(rel)
}

// ghData escapes s as the data (message) of a GitHub workflow command.
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghProp escapes s as a property value of a GitHub workflow command.
func ghProp(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// ghCommand formats one GitHub workflow command line: ::name
// k=v,k=v::message. props holds keys and values in turn.
func ghCommand(name, message string, props ...string) string {
	var b strings.Builder
	b.WriteString("::")
	b.WriteString(name)
	for i := 0; i+1 < len(props); i += 2 {
		if i == 0 {
			b.WriteByte(' ')
		} else {
			b.WriteByte(',')
		}
		b.WriteString(props[i])
		b.WriteByte('=')
		b.WriteString(ghProp(props[i+1]))
	}
	b.WriteString("::")
	b.WriteString(ghData(message))
	b.WriteByte('\n')
	return b.String()
}

// gitlabName makes s a GitLab section name: letters, digits, '_', '.'
// and '-' are kept, anything else becomes '_'.
func gitlabName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			return r
		}
		return '_'
	}, s)
}

// syncWriter serializes writes to w: the runner's live output and the
// CI reporter's lines share one stream from different goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// ciReporter turns a run's events into a CI service's log markup: a
// group (GitHub) or collapsible section (GitLab) around each session,
// annotations for failures (GitHub), and the evidence of a failed
// session in a section left open (GitLab).
//
// The runner hands it each event just before it prints the event's line
// (local.Runner.OnEvent), so a session's group opens before its
// "started" line, and closes after its outcome's line: at the next
// event, or when the run ends (finish).
type ciReporter struct {
	mode ciMode
	w    io.Writer
	// open is the step whose group or section is open ("" for none),
	// section its GitLab section name and header its title.
	open, section, header string
	// ended is set once the open group's session has an outcome: it
	// closes at the next event. after is what follows it then:
	// annotations, or a failure's open section.
	ended bool
	after []string
	// failure is the evidence of the open section's failed session
	// (GitLab).
	failure string
}

// event writes the markup one event calls for. Groups do not nest: a
// session that starts while another's group is open closes it.
func (r *ciReporter) event(e core.Event) {
	if r.ended {
		r.close(e.At.Time)
	}
	step := e.Step.String()
	switch e.Type {
	case core.EvStepStarted:
		var d core.StepStarted
		_ = json.Unmarshal(e.Data, &d)
		r.close(e.At.Time)
		r.header = fmt.Sprintf("%s (attempt %d, iteration %d)", step, d.Attempt, d.Iteration)
		switch r.mode {
		case ciGitHub:
			io.WriteString(r.w, ghCommand("group", r.header))
		case ciGitLab:
			r.section = gitlabName(fmt.Sprintf("flow_%s_%d_%d", step, d.Iteration, d.Attempt))
			fmt.Fprintf(r.w, "\x1b[0Ksection_start:%d:%s[collapsed=true]\r\x1b[0K%s\n", e.At.Unix(), r.section, r.header)
		}
		r.open = step
	case core.EvStepCompleted, core.EvStepInterrupted:
		r.outcome(step, "")
	case core.EvAttemptFailed:
		var d core.Outcome
		_ = json.Unmarshal(e.Data, &d)
		r.outcome(step, orDefault(d.Error, "failed"))
	case core.EvStepFailed:
		var d core.Outcome
		_ = json.Unmarshal(e.Data, &d)
		r.outcome(step, orDefault(d.Evidence, orDefault(d.Error, "failed")))
		if r.mode == ciGitHub {
			title := "flow: step " + step + " failed"
			if d.Budget {
				title = "flow: step " + step + " ran out of iterations"
			}
			r.after = append(r.after, ghCommand("error", orDefault(d.Error, "failed"), "title", title))
		}
	case core.EvGateFailed:
		var d core.GateFailure
		_ = json.Unmarshal(e.Data, &d)
		r.outcome(step, orDefault(d.Output, "gate failed: "+d.Reason))
		if r.mode != ciGitHub {
			break
		}
		switch {
		case d.Budget:
			r.after = append(r.after, ghCommand("error", fmt.Sprintf("%s (iteration budget of %d spent)", d.Reason, d.MaxIterations),
				"title", "flow: step "+step+" ran out of iterations"))
		case !d.Target.IsZero():
			r.after = append(r.after, ghCommand("warning", d.Reason, "title", "flow: "+step+" looped back to "+d.Target.String()))
		}
	case core.EvRunFinished, core.EvRunInterrupted, core.EvRunPaused, core.EvRunWaiting:
		r.close(e.At.Time)
	}
	if !r.ended && r.open == "" {
		// Nothing is open for an outcome to wait for: what follows it
		// goes out now.
		r.flushAfter()
	}
}

// outcome notes that step's session ended: its group closes at the next
// event. A failed session's evidence (failure non-empty) follows it in
// GitLab, in a section left open (GitLab collapses a section or not
// when it starts, before its session's outcome is known), its control
// characters escaped: it cannot end the section or start another.
func (r *ciReporter) outcome(step, failure string) {
	if r.open != step {
		return
	}
	r.ended = true
	if r.mode == ciGitLab {
		r.failure = failure
	}
}

// close closes the open group or section, if any, and writes what
// follows it; at is the time of the event that closes it.
func (r *ciReporter) close(at time.Time) {
	if r.open != "" {
		switch r.mode {
		case ciGitHub:
			io.WriteString(r.w, "::endgroup::\n")
		case ciGitLab:
			fmt.Fprintf(r.w, "\x1b[0Ksection_end:%d:%s\r\x1b[0K\n", at.Unix(), r.section)
			if r.failure != "" {
				fmt.Fprintf(r.w, "\x1b[0Ksection_start:%d:%s_failed\r\x1b[0K%s failed:\n%s\n\x1b[0Ksection_end:%d:%s_failed\r\x1b[0K\n",
					at.Unix(), r.section, r.header, termsafe.Escape(lastLines(r.failure, summaryTail)), at.Unix(), r.section)
			}
		}
	}
	r.open, r.section, r.header, r.ended, r.failure = "", "", "", false, ""
	r.flushAfter()
}

// flushAfter writes what waited for the open group to close.
func (r *ciReporter) flushAfter() {
	for _, a := range r.after {
		io.WriteString(r.w, a)
	}
	r.after = nil
}

// finish closes what is open when the run's runner has stopped.
func (r *ciReporter) finish(at time.Time) {
	r.close(at)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// ghMasks registers every secret value of the run with GitHub's log
// masker, before anything else is printed.
func (a *app) ghMasks(w io.Writer, wf *config.Workflow, more []string) {
	for _, v := range local.SecretValues(wf, slices.Concat(a.svc.Environ, more)) {
		// A multi-line value is masked line by line.
		for _, line := range strings.Split(strings.ReplaceAll(v, "\r\n", "\n"), "\n") {
			if line != "" {
				io.WriteString(w, ghCommand("add-mask", line))
			}
		}
	}
}

// ghFinish appends the run's summary to $GITHUB_STEP_SUMMARY and its
// result to $GITHUB_OUTPUT, each when set.
func (a *app) ghFinish(repo string, res ops.RunResult) error {
	if path := a.svc.Getenv("GITHUB_STEP_SUMMARY"); path != "" {
		st, err := a.svc.Status(repo, res.RunID)
		if err != nil {
			return fmt.Errorf("summarize run %s for GitHub: %w", res.RunID, err)
		}
		if err := a.appendFile(path, ghSummary(st, res)); err != nil {
			return fmt.Errorf("write the GitHub step summary: %w", err)
		}
	}
	if path := a.svc.Getenv("GITHUB_OUTPUT"); path != "" {
		var b strings.Builder
		ghOutput(&b, "run_id", res.RunID)
		ghOutput(&b, "status", string(res.Status))
		ghOutput(&b, "exit_code", strconv.Itoa(res.ExitCode))
		ghOutput(&b, "waiting_step", strings.Join(res.Waiting, "\n"))
		if err := a.appendFile(path, b.String()); err != nil {
			return fmt.Errorf("write the GitHub outputs: %w", err)
		}
	}
	return nil
}

// appendFile appends s to the file at path, creating it if need be.
func (a *app) appendFile(path, s string) error {
	f, err := a.svc.FS.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(f, s); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ghOutput writes one output as key=value, or for a multi-line value
// in the delimiter form key<<DELIM, the lines, DELIM, with a delimiter
// that is none of the value's lines.
func ghOutput(b *strings.Builder, key, value string) {
	if !strings.ContainsAny(value, "\r\n") {
		fmt.Fprintf(b, "%s=%s\n", key, value)
		return
	}
	delim := "FLOW_EOF"
	for lines := strings.Split(value, "\n"); containsLine(lines, delim); {
		delim += "_"
	}
	fmt.Fprintf(b, "%s<<%s\n%s\n%s\n", key, delim, value, delim)
}

func containsLine(lines []string, s string) bool {
	for _, l := range lines {
		if strings.TrimRight(l, "\r") == s {
			return true
		}
	}
	return false
}

// ghSummary renders a run as the Markdown of a GitHub step summary: its
// status, the step waiting on a human, a table of its steps and the
// evidence the run recorded on its failed steps. GitHub refuses a step's summary above
// 1 MiB, so a large run's stays well under it: the table lists every
// step of a run of up to summaryRows steps; of a larger run, the steps
// that failed, wait or run (at most summaryRows) and a line counting
// the others; notes are clipped and at most summaryEvidence steps show
// their evidence.
func ghSummary(v ops.Status, res ops.RunResult) string {
	st := v.State
	var b strings.Builder
	fmt.Fprintf(&b, "## flow run `%s`\n\n", res.RunID)
	fmt.Fprintf(&b, "- workflow: %s\n", record.MarkdownCell(st.WorkflowName))
	fmt.Fprintf(&b, "- status: **%s** (exit %d)\n", res.Status, res.ExitCode)
	if res.Reason != "" {
		fmt.Fprintf(&b, "- reason: %s\n", record.MarkdownCell(res.Reason))
	}
	if st.Usage != nil {
		fmt.Fprintf(&b, "- usage: %s\n", usageText(st.Usage))
	}
	for i, id := range res.Waiting {
		if i == summaryRows {
			fmt.Fprintf(&b, "- and %d more steps waiting on a human: `flow status %s`\n", len(res.Waiting)-i, res.RunID)
			break
		}
		fmt.Fprintf(&b, "- waiting on a human: **%s** — `flow approve %s %s`\n", record.MarkdownCell(id), res.RunID, core.ShellArg(id))
	}
	b.WriteString("\n| step | status | attempts | iteration | duration | note |\n|---|---|---|---|---|---|\n")
	all := len(st.StepOrder) <= summaryRows
	rows := 0
	left := map[core.Status]int{}
	for _, id := range st.StepOrder {
		s := st.Steps[id]
		if s == nil {
			continue
		}
		if !all && (rows == summaryRows || !notable(s.Status)) {
			left[s.Status]++
			continue
		}
		rows++
		dur := ""
		if s.StartedAt != nil && s.EndedAt != nil {
			dur = s.EndedAt.Sub(s.StartedAt.Time).Round(time.Millisecond).String()
		}
		note := ""
		switch {
		case s.Status == core.WaitingOnHuman:
			note = "waiting on a human"
		case s.LastError != nil:
			note = *s.LastError
		case s.Status == core.Skipped:
			note = s.SkipReason
		}
		if p, ok := record.ItemsProgress(s); ok {
			note = strings.TrimSuffix(p.String()+": "+note, ": ")
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %s | %s |\n", record.MarkdownCell(id.String()), s.Status, s.Attempts, s.IterationCount, dur, record.MarkdownCell(note))
	}
	if len(left) > 0 {
		var parts []string
		for _, status := range []core.Status{core.Completed, core.Skipped, core.Pending, core.Failed, core.Running, core.WaitingOnHuman} {
			if n := left[status]; n > 0 {
				word := strings.ToLower(string(status))
				if status == core.WaitingOnHuman {
					word = "waiting on a human"
				}
				parts = append(parts, fmt.Sprintf("%d %s", n, word))
			}
		}
		fmt.Fprintf(&b, "\n%d more steps are not listed (%s): `flow status %s` lists every step.\n", sumOf(left), strings.Join(parts, ", "), res.RunID)
	}
	shown := 0
	for _, id := range st.StepOrder {
		s := st.Steps[id]
		if s == nil || s.Status != core.Failed || s.Evidence == "" {
			continue
		}
		if shown == summaryEvidence {
			fmt.Fprintf(&b, "\nThe evidence of the other failed steps: `flow logs %s STEP`.\n", res.RunID)
			break
		}
		shown++
		fence := mdFence(s.Evidence)
		fmt.Fprintf(&b, "\n<details><summary>%s: evidence (last %d lines)</summary>\n\n%s\n%s\n%s\n\n</details>\n",
			record.MarkdownCell(id.String()), summaryTail, fence, lastLines(s.Evidence, summaryTail), fence)
	}
	return b.String() + "\n"
}

// summaryRows bounds the rows of a job summary's table, and
// summaryEvidence the failed steps whose evidence it shows (each at
// most 16 KiB): with notes of at most 200 bytes, a summary stays under
// 512 KiB, half of what GitHub takes.
const (
	summaryRows     = 500
	summaryEvidence = 10
)

// notable reports whether a step of a large run is listed in its job
// summary: it failed, waits on a human or runs.
func notable(s core.Status) bool {
	return s == core.Failed || s == core.WaitingOnHuman || s == core.Running
}

func sumOf(m map[core.Status]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// summaryTail is how many lines of a failed step's evidence the job
// summary shows.
const summaryTail = 20

// lastLines returns the last n lines of s, without a trailing newline.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// mdFence returns a Markdown code fence longer than any run of backticks
// in s, so that s cannot end the block it is shown in.
func mdFence(s string) string {
	longest, run := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// codeQuality is one issue of a GitLab Code Quality report.
type codeQuality struct {
	Description string `json:"description"`
	CheckName   string `json:"check_name"`
	Fingerprint string `json:"fingerprint"`
	Severity    string `json:"severity"`
	Location    struct {
		Path  string `json:"path"`
		Lines struct {
			Begin int `json:"begin"`
		} `json:"lines"`
	} `json:"location"`
}

// gitlabCodeQuality renders diagnostics as a GitLab Code Quality report:
// a JSON array, each issue's fingerprint a hash of its file, line and
// message, stable from one pipeline to the next, and its path as path
// gives it (relative to the project's checkout).
func gitlabCodeQuality(ds config.Diagnostics, path func(string) string) ([]byte, error) {
	issues := make([]codeQuality, 0, len(ds))
	for _, d := range ds {
		var q codeQuality
		q.Description = d.Message
		q.CheckName = "flow-validate"
		file := path(d.Pos.File)
		sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%s", file, d.Pos.Line, d.Message)))
		q.Fingerprint = hex.EncodeToString(sum[:16])
		q.Severity = "major"
		q.Location.Path = file
		q.Location.Lines.Begin = d.Pos.Line
		issues = append(issues, q)
	}
	return json.MarshalIndent(issues, "", "  ")
}
