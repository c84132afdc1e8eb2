package redact

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	r := New("s3cr3t-abc123", "hunter2", "ab", "s3cr3t")
	tests := []struct{ in, want string }{
		{"invalid operation: int(s3cr3t-abc123)", "invalid operation: int(***)"},
		{"password=hunter2; again hunter2", "password=***; again ***"},
		{"short ab stays", "short ab stays"},
		{"s3cr3t alone", "*** alone"},
		{"nothing here", "nothing here"},
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestJSON(t *testing.T) {
	secret := `p"a\ss<wo>rd&`
	r := New(secret)
	b, _ := json.Marshal(map[string]string{"error": "bad " + secret})
	got := r.Bytes(b)
	if bytes.Contains(got, []byte("wo")) || !json.Valid(got) {
		t.Fatalf("Bytes(%s) = %s", b, got)
	}
	var m map[string]string
	_ = json.Unmarshal(got, &m)
	if m["error"] != "bad ***" {
		t.Errorf("decoded %q", m["error"])
	}
}

func TestNil(t *testing.T) {
	var r *Redactor = New("ab", "")
	if r != nil {
		t.Fatal("New of short values is not nil")
	}
	if r.String("ab") != "ab" || string(r.Bytes([]byte("ab"))) != "ab" {
		t.Error("a nil Redactor changed its input")
	}
	var buf bytes.Buffer
	w := r.Writer(&buf)
	w.Write([]byte("abc"))
	if buf.String() != "abc" {
		t.Errorf("nil Writer held output back: %q", buf.String())
	}
}

// TestWriterSplits writes the same text in every split into two and
// into single bytes: a secret split across writes is hidden all the
// same, and nothing else changes.
func TestWriterSplits(t *testing.T) {
	r := New("TOKEN-123456", "k3y!")
	text := "start TOKEN-123456 mid k3y!k3y! TOKEN-12345 end TOKEN-123456"
	want := "start *** mid ****** TOKEN-12345 end ***"
	for i := 0; i <= len(text); i++ {
		var buf bytes.Buffer
		w := r.Writer(&buf)
		w.Write([]byte(text[:i]))
		w.Write([]byte(text[i:]))
		w.Close()
		if buf.String() != want {
			t.Fatalf("split at %d: %q; want %q", i, buf.String(), want)
		}
	}
	var buf bytes.Buffer
	w := r.Writer(&buf)
	for i := range len(text) {
		w.Write([]byte{text[i]})
	}
	w.Close()
	if buf.String() != want {
		t.Fatalf("byte by byte: %q; want %q", buf.String(), want)
	}
}

// TestWriterHoldsLittle: what the writer holds back is bounded by the
// longest secret, however much passes through.
func TestWriterHoldsLittle(t *testing.T) {
	r := New("0123456789")
	var buf bytes.Buffer
	w := r.Writer(&buf).(*writer)
	chunk := []byte(strings.Repeat("x", 1000))
	for range 100 {
		w.Write(chunk)
		if len(w.held) >= 10 {
			t.Fatalf("held %d bytes", len(w.held))
		}
	}
	w.Close()
	if buf.Len() != 100000 {
		t.Errorf("passed on %d bytes", buf.Len())
	}
}

func BenchmarkWriter(b *testing.B) {
	r := New("s3cr3t-abc123", "hunter2hunter2")
	chunk := bytes.Repeat([]byte("some ordinary output line\n"), 1200)
	w := r.Writer(discard{})
	b.SetBytes(int64(len(chunk)))
	for b.Loop() {
		w.Write(chunk)
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// TestWriterAgreesWithString writes random text holding secrets, some
// overlapping and some inside others, in random pieces: what comes out
// is what String makes of the whole text.
func TestWriterAgreesWithString(t *testing.T) {
	r := New("abab", "ababab", "secret-1", "cret", "x\"y\\z")
	pieces := []string{"a", "b", "ab", "abab", "secret-1", "secr", "et-1", "cret", "x\"y\\z", "x\\\"y\\\\z", " ", "\n"}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 5000 {
		var sb strings.Builder
		for n := rng.IntN(30); n > 0; n-- {
			sb.WriteString(pieces[rng.IntN(len(pieces))])
		}
		text := sb.String()
		var buf bytes.Buffer
		w := r.Writer(&buf)
		for rest := text; rest != ""; {
			k := 1 + rng.IntN(len(rest))
			w.Write([]byte(rest[:k]))
			rest = rest[k:]
		}
		w.Close()
		if want := r.String(text); buf.String() != want {
			t.Fatalf("%q: wrote %q; String gives %q", text, buf.String(), want)
		}
	}
}

// TestWriterManySecrets: a write holding a secret many times
// among values that never occur is hidden whole (the writer searches
// each value once per write, not once per secret found).
func TestWriterManySecrets(t *testing.T) {
	r := New("never-1", "never-2", "never-3", "here")
	text := strings.Repeat("here.", 20000)
	var buf bytes.Buffer
	w := r.Writer(&buf)
	w.Write([]byte(text))
	w.Close()
	if want := strings.Repeat("***.", 20000); buf.String() != want {
		t.Fatalf("got %d bytes, %q…; want %d bytes", buf.Len(), buf.String()[:20], len(want))
	}
}
