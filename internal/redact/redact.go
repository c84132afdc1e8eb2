package redact

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
)

// Mask is what a secret is replaced with.
const Mask = "***"

// MinLen is the shortest value a Redactor hides.
const MinLen = 4

// Redactor hides a fixed set of values. A nil *Redactor hides nothing,
// and its methods return their input unchanged. It is safe for
// concurrent use.
type Redactor struct {
	// values holds the byte forms to hide, longest first, so that a
	// value that contains another is hidden whole.
	values [][]byte
	max    int
	repl   *strings.Replacer
}

// New returns a Redactor for values, or nil when none is at least
// MinLen bytes long.
func New(values ...string) *Redactor {
	seen := map[string]bool{}
	var forms []string
	for _, v := range values {
		if len(v) < MinLen {
			continue
		}
		for _, f := range []string{v, jsonForm(v)} {
			if !seen[f] {
				seen[f] = true
				forms = append(forms, f)
			}
		}
	}
	if len(forms) == 0 {
		return nil
	}
	slices.SortFunc(forms, func(a, b string) int { return len(b) - len(a) })
	r := &Redactor{}
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		r.values = append(r.values, []byte(f))
		r.max = max(r.max, len(f))
		pairs = append(pairs, f, Mask)
	}
	r.repl = strings.NewReplacer(pairs...)
	return r
}

// jsonForm returns v as it appears between the quotes of a JSON string
// written by encoding/json.
func jsonForm(v string) string {
	b, err := json.Marshal(v)
	if err != nil || len(b) < 2 {
		return v
	}
	return string(b[1 : len(b)-1])
}

// String returns s with every secret replaced by Mask.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	return r.repl.Replace(s)
}

// Bytes returns b with every secret replaced by Mask. It returns b
// itself when b holds none.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil || !r.contains(b) {
		return b
	}
	return []byte(r.repl.Replace(string(b)))
}

func (r *Redactor) contains(b []byte) bool {
	for _, v := range r.values {
		if bytes.Contains(b, v) {
			return true
		}
	}
	return false
}

// match returns the earliest secret in b at or after from: its start
// and length, or -1. next[k] caches where r.values[k] occurs next, at
// or after an earlier from (-1: nowhere, -2: not yet looked for), so
// that looking for the secret after each one found does not search the
// rest of b again for every value: a write costs in proportion to its
// length, however many secrets it holds.
func (r *Redactor) match(b []byte, from int, next []int) (int, int) {
	best, blen := -1, 0
	for k, v := range r.values {
		if next[k] == -2 || (next[k] >= 0 && next[k] < from) {
			if next[k] = bytes.Index(b[from:], v); next[k] >= 0 {
				next[k] += from
			}
		}
		if i := next[k]; i >= 0 && (best < 0 || i < best || (i == best && len(v) > blen)) {
			best, blen = i, len(v)
		}
	}
	return best, blen
}

// Writer returns a writer that hides secrets in what is written through
// it before passing it on to w. Close flushes what it holds back (and
// closes w when w is an io.Closer). With a nil Redactor it returns a
// writer that passes everything through at once.
func (r *Redactor) Writer(w io.Writer) io.WriteCloser {
	if r == nil {
		return nopCloser{w}
	}
	return &writer{r: r, w: w}
}

type nopCloser struct{ io.Writer }

func (n nopCloser) Close() error {
	if c, ok := n.Writer.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

type writer struct {
	r *Redactor
	w io.Writer
	// held is output not yet passed on: it may be the start of a
	// secret. It is shorter than the longest secret.
	held []byte
	// buf joins held and a write; out gathers what is passed on; next
	// is match's cache. All are kept for the next write.
	buf, out []byte
	next     []int
}

// Write hides secrets in p and passes on everything that cannot be the
// start of one. It reports len(p) written unless w fails.
func (x *writer) Write(p []byte) (int, error) {
	buf := p
	if len(x.held) > 0 {
		x.buf = append(append(x.buf[:0], x.held...), p...)
		buf = x.buf
	}
	// A secret that starts before cut ends within buf: it can be
	// decided now. Bytes from cut on may begin one that the next write
	// completes.
	cut := len(buf) - (x.r.max - 1)
	if x.next == nil {
		x.next = make([]int, len(x.r.values))
	}
	for k := range x.next {
		x.next[k] = -2
	}
	out := x.out[:0]
	i := 0
	for i < cut {
		j, n := x.r.match(buf, i, x.next)
		if j < 0 || j >= cut {
			if i == 0 {
				out = buf[:cut] // no secret: pass it on uncopied
			} else {
				out = append(out, buf[i:cut]...)
			}
			i = cut
			break
		}
		out = append(out, buf[i:j]...)
		out = append(out, Mask...)
		i = j + n
	}
	x.held = append(x.held[:0], buf[i:]...)
	if len(out) > 0 && &out[0] != &buf[0] {
		x.out = out[:0]
	}
	if len(out) > 0 {
		if _, err := x.w.Write(out); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Close passes on what is held back, hidden, and closes w if it can.
func (x *writer) Close() error {
	var err error
	if len(x.held) > 0 {
		_, err = x.w.Write(x.r.Bytes(x.held))
		x.held = nil
	}
	if c, ok := x.w.(io.Closer); ok {
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
