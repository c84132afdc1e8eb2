package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
	"github.com/flow-run/flow/internal/confine"
	"github.com/flow-run/flow/runner/core"
)

// FillInputs gives an approval of step the defaults of the inputs the
// step declares and the approval does not give (a required input has
// none); a rejection, or a step that declares none, is left as it is.
func FillInputs(step *config.Step, in *core.HumanInput) {
	if !in.Approved || step == nil || step.Human == nil || len(step.Human.Inputs) == 0 {
		return
	}
	for _, d := range step.Human.Inputs {
		if _, ok := in.Input[d.Name]; ok || d.Required {
			continue
		}
		if in.Input == nil {
			in.Input = map[string]any{}
		}
		in.Input[d.Name] = d.Default
	}
}

// ReadManualInput reads a manual input file: nil when there is none
// yet. A file that is empty or ends before its JSON does is one being
// written (flow approve creates it, then writes it): it is not there
// yet either.
func ReadManualInput(fsys afero.Fs, path string) (*core.HumanInput, error) {
	b, err := confine.ReadFile(fsys, path, maxManualInput, filepath.Dir(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read manual input %s: %w", path, err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) && syn.Offset >= int64(len(bytes.TrimRight(b, " \t\r\n"))) {
			return nil, nil // cut short: still being written
		}
		return nil, fmt.Errorf("manual input %s is not a JSON object: %w", path, err)
	}
	if _, ok := raw["approved"]; !ok {
		return nil, fmt.Errorf("manual input %s has no \"approved\": true or false", path)
	}
	var in core.HumanInput
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("manual input %s: %w", path, err)
	}
	return &in, nil
}

// readDecision reads the manual input file of a waiting step: as
// ReadManualInput does, or, for a step whose human takes any file
// (config.Human.AnyFile, agent_orchestrator's human_in_the_loop), taking
// whatever a person wrote there as a decision: a JSON object with a
// boolean "approved" is read as flow approve writes it; any other JSON
// object approves, kept as the input; any other content approves, kept
// as the input's "content". An empty file, or JSON cut short, is one
// still being written.
func ReadDecision(fsys afero.Fs, path string, anyFile bool) (*core.HumanInput, error) {
	if !anyFile {
		return ReadManualInput(fsys, path)
	}
	b, err := confine.ReadFile(fsys, path, maxManualInput, filepath.Dir(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read manual input %s: %w", path, err)
	}
	text := bytes.TrimSpace(b)
	if len(text) == 0 {
		return nil, nil
	}
	var obj map[string]any
	err = json.Unmarshal(text, &obj)
	var syn *json.SyntaxError
	switch {
	case err == nil && obj != nil:
		if _, ok := obj["approved"].(bool); ok {
			var in core.HumanInput
			if err := json.Unmarshal(text, &in); err != nil {
				return nil, fmt.Errorf("manual input %s: %w", path, err)
			}
			return &in, nil
		}
		return &core.HumanInput{Approved: true, Input: obj, By: "manual input file"}, nil
	case errors.As(err, &syn) && text[0] == '{' && syn.Offset >= int64(len(text)):
		return nil, nil // cut short: still being written
	}
	return &core.HumanInput{Approved: true, Input: map[string]any{"content": string(text)}, By: "manual input file"}, nil
}

// maxManualInput caps a manual input file: a decision and its inputs,
// not a data file.
const maxManualInput = 1 << 20

// Decided says how Decide ended when it did not record a new decision:
// the same decision had already been made (by whoever is named in it).
type Decided struct {
	// Already is the decision that was there, identical to the one
	// asked for.
	Already core.HumanInput
}

// SubmitDecision records a human's decision for a step waiting in a run: what
// flow approve and flow reject do. Exactly one decision wins per wait:
// the manual input file is created exclusively, and every other caller
// gets an ExitRefused error saying what was decided, by whom and when.
// Asking for the decision already made (same approval, input and
// reason) is not an error: it is returned as Decided.Already.
// Deciding a step that is not waiting is an ExitRefused error that says
// what the step is doing.
func SubmitDecision(fsys afero.Fs, runDir string, step core.StepKey, in core.HumanInput, now time.Time) (*Decided, error) {
	st, _, err := LoadState(fsys, runDir, false, now)
	if err != nil {
		return nil, err
	}
	s := st.Steps[step]
	if s == nil {
		return nil, core.Invalid("run %s has no step %q", st.RunID, step)
	}
	if s.Status != core.WaitingOnHuman {
		return decidedAlready(st.RunID, step, s, in)
	}
	path := LayoutOf(runDir, st.RunID).ManualInput(step)
	if s.ManualInputPath != nil {
		path = *s.ManualInputPath
	}
	if in.At == "" {
		in.At = core.Time{Time: now.UTC()}.String()
	}
	if prev, _ := ReadManualInput(fsys, path); prev != nil && DecidedBefore(prev, s) {
		// The decision of an earlier wait, left by a runner that died
		// before moving it aside: it does not decide this wait.
		if err := fsys.Rename(path, staleDecisionPath(path, now)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("move aside the decision of an earlier wait: %w", err)
		}
	}
	err = CreateManualInput(fsys, path, in)
	if errors.Is(err, fs.ErrExist) {
		prev := awaitManualInput(fsys, path)
		if prev == nil {
			return nil, core.Refuse("step %s of run %s is being decided by someone else; see flow status %s", step, st.RunID, st.RunID)
		}
		if sameDecision(*prev, in) {
			return &Decided{Already: *prev}, nil
		}
		return nil, core.Refuse("step %s of run %s was already %s; the runner has not recorded it yet", step, st.RunID, DescribeDecision(*prev))
	}
	if err != nil {
		return nil, err
	}
	// The runner may have recorded another decision (and moved its file
	// aside) between the state read above and the create: then the file
	// just made decides nothing, and must not stay to decide a later
	// wait.
	after, _, err := LoadState(fsys, runDir, false, now)
	if err != nil {
		return nil, err
	}
	if as := after.Steps[step]; as != nil && (as.Status != core.WaitingOnHuman || !sameTime(as.StartedAt, s.StartedAt)) {
		_ = fsys.Remove(path)
		return decidedAlready(st.RunID, step, as, in)
	}
	return nil, nil
}

// decidedAlready is Decide's answer for a step that no longer waits.
func decidedAlready(runID string, step core.StepKey, s *core.StepState, in core.HumanInput) (*Decided, error) {
	if s.Human != nil && s.Status != core.Pending && s.Status != core.Running {
		if sameDecision(*s.Human, in) {
			return &Decided{Already: *s.Human}, nil
		}
		return nil, core.Refuse("step %s of run %s was already %s; it is %s", step, runID, DescribeDecision(*s.Human), s.Status)
	}
	return nil, core.Refuse("step %s of run %s is %s, not waiting on a human", step, runID, s.Status)
}

// sameDecision reports whether two decisions say the same thing:
// approval, input and reason (who and when may differ).
func sameDecision(a, b core.HumanInput) bool {
	if a.Approved != b.Approved || a.Reason != b.Reason {
		return false
	}
	if len(a.Input) == 0 && len(b.Input) == 0 {
		return true
	}
	ja, erra := json.Marshal(a.Input)
	jb, errb := json.Marshal(b.Input)
	return erra == nil && errb == nil && bytes.Equal(ja, jb)
}

// describeDecision says what a decision was, by whom and when:
// "approved by alice at 2025-01-15T14:30:00.123456Z".
func DescribeDecision(in core.HumanInput) string {
	s := Verb(in.Approved)
	if in.By != "" {
		s += " by " + in.By
	}
	if in.At != "" {
		s += " at " + in.At
	}
	if in.Reason != "" {
		s += fmt.Sprintf(" (%s)", in.Reason)
	}
	return s
}

func sameTime(a, b *core.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(b.Time)
}

// staleDecisionPath is where a decision of an earlier wait is moved.
func staleDecisionPath(path string, now time.Time) string {
	return strings.TrimSuffix(path, ".json") + ".stale-" + now.UTC().Format("20060102T150405.000000Z") + ".json"
}

// createManualInput writes a decision to a manual input file that must
// not exist yet (fs.ErrExist otherwise): creating it is what makes a
// decision win. The file is synced before it is closed.
func CreateManualInput(fsys afero.Fs, path string, in core.HumanInput) error {
	b, err := json.MarshalIndent(in, "", "  ")
	if err != nil {
		return err
	}
	if err := fsys.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write manual input: %w", err)
	}
	f, err := fsys.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		return fmt.Errorf("write manual input: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = fsys.Remove(path)
		return fmt.Errorf("write manual input: %w", err)
	}
	return nil
}

// awaitManualInput reads a manual input file that another caller has
// just created, giving it up to a second to be written in full.
func awaitManualInput(fsys afero.Fs, path string) *core.HumanInput {
	for range 50 {
		in, err := ReadManualInput(fsys, path)
		if in != nil || err != nil {
			return in
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// decidedBefore reports whether in is the decision of an earlier wait of
// step s: one written before the step began waiting this time. After a
// rejection loops back, the file of that decision is still there when the
// step waits again, and must not decide the new wait.
func DecidedBefore(in *core.HumanInput, s *core.StepState) bool {
	if in == nil || in.At == "" || s.StartedAt == nil {
		return false
	}
	t, err := time.Parse(time.RFC3339Nano, in.At)
	return err == nil && t.Before(s.StartedAt.Time)
}

// maxDecisionSkew is how far in the future a decision's time may be:
// the clocks of the machines that share a repository differ a little.
const maxDecisionSkew = 5 * time.Minute

// Undated says why a decision was not made by flow for a wait that is
// going on at now: it has no time (at), an unreadable one, or one in
// the future; "" when it is dated as flow dates its decisions.
func Undated(in *core.HumanInput, now time.Time) string {
	if in.At == "" {
		return "it has no time (at); decide with flow approve or flow reject"
	}
	t, err := time.Parse(time.RFC3339Nano, in.At)
	if err != nil {
		return fmt.Sprintf("its time %q is not a time", in.At)
	}
	if t.After(now.Add(maxDecisionSkew)) {
		return fmt.Sprintf("its time %s is in the future", in.At)
	}
	return ""
}

// Verb returns approved or rejected.
func Verb(approved bool) string {
	if approved {
		return "approved"
	}
	return "rejected"
}
