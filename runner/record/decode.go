package record

import (
	"bytes"
	"encoding/json"
	"runtime"
	"sync"

	"github.com/flow-run/flow/runner/core"
)

// splitMin is the size of a snapshot from which decodeState decodes
// its steps on several goroutines: about 300 steps.
const splitMin = 256 << 10

// splitChunk is the least number of bytes of steps a goroutine of
// decodeState decodes.
const splitChunk = 128 << 10

// decodeState decodes a run_state.json as json.Unmarshal into a State
// does, or returns nil where json.Unmarshal fails. It may change b
// while it works, and leaves it as it was.
//
// Decoding is most of the time flow status takes on a run of thousands
// of steps, so a large snapshot in the layout flow writes (State.Indented:
// the steps last, one per line indented by four spaces) is decoded in
// parts at once, one goroutine per CPU: the fields before the steps,
// and runs of whole steps, each closed into an object of its own (see
// decodeSplit), each run read by core.DecodeSteps when it can and by
// encoding/json when it cannot. Anything else is decoded whole.
func decodeState(b []byte) *core.State {
	if workers := runtime.GOMAXPROCS(0); len(b) >= splitMin {
		// Two parts per goroutine even out parts that take longer.
		if st := decodeSplit(b, max(splitChunk, len(b)/(2*workers)), workers); st != nil {
			return st
		}
	}
	var st core.State
	if json.Unmarshal(b, &st) != nil {
		return nil
	}
	return &st
}

// stepStart is what follows the comma between two steps of a snapshot
// in flow's layout: a line of a key indented by four spaces.
const stepStart = ",\n    \""

// decodeSplit decodes b in parts of about size bytes on up to workers
// goroutines, or returns nil when it cannot, and
// then the caller decodes it whole (a damaged snapshot, another layout).
//
// b must read head "steps": {body}, with only white space and the
// state's closing brace after the body's. Each part is made a JSON object
// in place: the comma before the steps becomes the head's closing
// brace, and the body is cut at commas followed by a step's key line
// (stepStart), each comma becoming the closing brace of the part before
// it and the newline after it the opening brace of the next. Every
// part must decode. A cut inside a step would leave braces unbalanced,
// so if all parts decode, the cuts were between steps, the steps end
// where the state does, and b decodes whole to the same State: the
// head's fields, and the steps of every part in order (a later
// duplicate key winning, as in one decode).
func decodeSplit(b []byte, size, workers int) *core.State {
	at := bytes.Index(b, []byte(stepsKey))
	open := at + len(stepsKey)
	if at <= 0 || b[at-1] != ',' || open >= len(b) || b[open] != '{' {
		return nil
	}
	end := len(bytes.TrimRight(b, " \t\r\n"))
	if end == 0 || b[end-1] != '}' {
		return nil
	}
	end = len(bytes.TrimRight(b[:end-1], " \t\r\n")) // just past the steps' closing brace
	if end <= open+1 || b[end-1] != '}' {
		return nil
	}
	// The parts: b[open:end] cut at the first comma between steps after
	// every size bytes.
	var cuts []int // offsets of the commas cut at
	for from := open + size; from < end; {
		i := bytes.Index(b[from:end], []byte(stepStart))
		if i < 0 {
			break
		}
		c := from + i
		cuts = append(cuts, c)
		from = c + size
	}
	b[at-1] = '}'
	for _, c := range cuts {
		b[c], b[c+1] = '}', '{'
	}
	defer func() {
		b[at-1] = ','
		for _, c := range cuts {
			b[c], b[c+1] = ',', '\n'
		}
	}()
	parts := make([][]byte, 0, len(cuts)+1)
	start := open
	for _, c := range cuts {
		parts = append(parts, b[start:c+1])
		start = c + 1
	}
	parts = append(parts, b[start:end])

	var (
		st    core.State
		steps = make([]map[string]*core.StepState, len(parts))
		errs  = make([]error, len(parts)+1)
		wg    sync.WaitGroup
		next  = make(chan int, len(parts)+1)
	)
	for i := range len(parts) + 1 {
		next <- i
	}
	close(next)
	for range min(workers, len(parts)+1) {
		wg.Go(func() {
			for i := range next {
				if i == len(parts) {
					errs[i] = json.Unmarshal(b[:at], &st)
					continue
				}
				if m, ok := core.DecodeSteps(parts[i]); ok {
					steps[i] = m
					continue
				}
				errs[i] = json.Unmarshal(parts[i], &steps[i])
			}
		})
	}
	wg.Wait()
	n := 0
	for i, err := range errs {
		if err != nil {
			return nil
		}
		if i < len(steps) {
			n += len(steps[i])
		}
	}
	st.Steps = make(map[string]*core.StepState, n)
	for _, m := range steps {
		for id, s := range m {
			st.Steps[id] = s
		}
	}
	return &st
}
