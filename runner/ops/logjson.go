package ops

import (
	"encoding/json"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/flow-run/flow/runner/core"
	"github.com/flow-run/flow/runner/record"
)

// LogChunk is one line of `flow logs --json`, which prints JSON Lines,
// each with a type as every stream of flow's does: "log" for the pieces
// of a step's session logs in the order they are read (with --follow,
// as the session writes them), then one "end" line saying how the step
// stands. Concatenating the Text of the lines of one Log gives the log
// (invalid UTF-8 replaced by U+FFFD).
type LogChunk struct {
	// Type is "log".
	Type  string `json:"type"`
	RunID string `json:"run_id"`
	Step  string `json:"step"`
	// Log is the session log's name (<step>.<iteration>.<attempt>.log,
	// or its .check.log), with the session's iteration and attempt.
	Log       string `json:"log,omitempty"`
	Iteration int    `json:"iteration,omitempty"`
	Attempt   int    `json:"attempt,omitempty"`
	// Offset is where Text starts in the log, in bytes.
	Offset int64  `json:"offset"`
	Text   string `json:"text"`
}

// LogEndLine is the last line of flow logs --json: its type is "end".
type LogEndLine struct {
	Type  string  `json:"type"`
	RunID string  `json:"run_id"`
	Step  string  `json:"step"`
	End   *LogEnd `json:"end"`
}

// LogEnd is how a step stands when its logs have been printed: its
// status (core.StepStatus, lower case) and, once its session has
// ended, its exit code and error.
type LogEnd struct {
	Status   string `json:"status"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Error    string `json:"error,omitempty"`
}

// chunkWriter turns the bytes of one session log into LogChunk lines.
// A character split between two writes is held back until it is whole.
type chunkWriter struct {
	enc     *json.Encoder
	chunk   LogChunk
	pending []byte
}

// newChunkWriter returns a writer of lf's bytes, from offset off, as
// JSON lines on enc.
func newChunkWriter(enc *json.Encoder, runID, step string, lf record.LogFile, off int64) *chunkWriter {
	return &chunkWriter{enc: enc, chunk: LogChunk{Type: "log", RunID: runID, Step: step, Log: lf.Name, Iteration: lf.Iteration, Attempt: lf.Attempt, Offset: off}}
}

// Write implements io.Writer.
func (c *chunkWriter) Write(p []byte) (int, error) {
	buf := append(c.pending, p...)
	cut := len(buf)
	// Hold back an incomplete character at the end (at most 3 bytes).
	for i := 1; i <= 3 && i <= len(buf); i++ {
		if b := buf[len(buf)-i]; utf8.RuneStart(b) {
			if !utf8.FullRune(buf[len(buf)-i:]) {
				cut = len(buf) - i
			}
			break
		}
	}
	if err := c.emit(buf[:cut]); err != nil {
		return 0, err
	}
	c.pending = append([]byte(nil), buf[cut:]...)
	return len(p), nil
}

// emit writes one line of b, if b holds anything.
func (c *chunkWriter) emit(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	c.chunk.Text = strings.ToValidUTF8(string(b), "\uFFFD")
	if err := c.enc.Encode(c.chunk); err != nil {
		return err
	}
	c.chunk.Offset += int64(len(b))
	return nil
}

// Close writes what is held back.
func (c *chunkWriter) Close() error {
	p := c.pending
	c.pending = nil
	return c.emit(p)
}

// logEnd is the last line of flow logs --json for a step of st.
func logEnd(runID string, step core.StepKey, st *core.State) LogEndLine {
	end := &LogEnd{Status: "pending"}
	if ss := st.Steps[step]; ss != nil {
		end.Status = strings.ToLower(string(ss.Status))
		end.ExitCode = ss.ExitCode
		if ss.LastError != nil {
			end.Error = *ss.LastError
		}
	}
	return LogEndLine{Type: "end", RunID: runID, Step: step.String(), End: end}
}

var _ io.WriteCloser = (*chunkWriter)(nil)
