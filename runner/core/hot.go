package core

import (
	"unicode/utf8"
)

// Every step of a run records three events: step_started,
// session_started and step_completed. In a run of thousands of steps,
// marshalling their data and decoding it back to apply it cost more
// than anything else the core does per step. So, for these three types
// only:
//
//   - NewEvent writes their JSON by hand (appendStepStarted,
//     appendSessionStarted, appendOutcome), byte for byte as
//     json.Marshal writes it, and leaves anything unusual to
//     json.Marshal;
//   - the core applies the events it makes from the typed value it
//     marshalled rather than from the decoded JSON (applyLive), when
//     that value is certain to equal what decoding the JSON gives
//     (stepStartedExact, sessionStartedExact, completedExact). Events
//     read from events.jsonl are decoded, as every other type is.
//
// The live state and a state replayed from the log are therefore still
// equal by construction: the typed path folds the very value the
// decoding path would produce.

// stepStartedExact reports whether decoding json.Marshal(d) gives a
// StepStarted equal to d. Its ints are written in decimal and read
// back exactly; its strings are, unless they hold invalid UTF-8, which
// json.Marshal writes as U+FFFD. The empty strings it omits decode as
// empty.
func stepStartedExact(d *StepStarted) bool {
	return utf8.ValidString(d.LogPath) && utf8.ValidString(d.ReportPath)
}

// sessionStartedExact reports whether decoding json.Marshal(d) gives a
// SessionStarted equal to d: as for stepStartedExact, whether its
// strings are valid UTF-8.
func sessionStartedExact(d *SessionStarted) bool {
	return utf8.ValidString(d.Marker) && utf8.ValidString(d.LogPath) && utf8.ValidString(d.ReportPath)
}

// completedExact reports whether decoding json.Marshal(o) gives an
// Outcome equal to o (as reflect.DeepEqual compares them). It demands
//
//   - that every string, the keys of Signals included, be valid UTF-8
//     (json.Marshal writes invalid bytes as U+FFFD);
//   - that Signals be nil or not empty: an empty map is omitted
//     (omitempty) and decodes as nil;
//   - that the fields a plain step leaves empty be nil: Artifacts, Logs
//     and Metrics (an empty, non-nil one would decode as nil; checking
//     their elements is left to the decoding path), Report (json.Marshal
//     compacts and escapes a json.RawMessage) and Usage (floats).
//
// Ints, the one behind ExitCode included, and bools round-trip as they
// are. What it cannot check is whose memory ExitCode and Signals are:
// applyLive copies them, so that the state shares nothing with the
// caller.
func completedExact(o *Outcome) bool {
	if o.Artifacts != nil || o.Logs != nil || o.Metrics != nil || o.Report != nil || o.Usage != nil {
		return false
	}
	if o.Signals != nil && len(o.Signals) == 0 {
		return false
	}
	for k := range o.Signals {
		if !utf8.ValidString(k) {
			return false
		}
	}
	return utf8.ValidString(o.Error) && utf8.ValidString(o.ReportPath) && utf8.ValidString(o.Verdict) &&
		utf8.ValidString(o.Duration) && utf8.ValidString(o.AgentSession)
}

// applyLive folds into s the event e, which NewEvent just made from
// data. It is Apply(s, e), without decoding e.Data when data is one of
// the three types above, of e's type, and exact (the *Exact helpers).
// Pass a nil data when e.Data is not data's JSON (secrets were hidden
// in it): the event is then decoded.
func applyLive(s *State, e Event, data any) error {
	// An unknown step is left to Apply, which says so.
	switch d := data.(type) {
	case StepStarted:
		if st := s.Steps[e.Step]; st != nil && e.Type == EvStepStarted && stepStartedExact(&d) {
			stepStarted(s, st, &d, applyHead(s, e))
			return nil
		}
	case SessionStarted:
		if st := s.Steps[e.Step]; st != nil && e.Type == EvSessionStarted && sessionStartedExact(&d) {
			applyHead(s, e)
			sessionStarted(st, &d)
			return nil
		}
	case Outcome:
		if st := s.Steps[e.Step]; st != nil && e.Type == EvStepCompleted && completedExact(&d) {
			stepCompleted(s, st, &d, applyHead(s, e))
			return nil
		}
	}
	return Apply(s, e)
}

// applyHead does to s what Apply and onStep do before they call an
// applier, and returns the time onStep passes to it.
func applyHead(s *State, e Event) Time {
	s.Seq = e.Seq
	s.UpdatedAt = timep(e.At)
	return e.At
}
