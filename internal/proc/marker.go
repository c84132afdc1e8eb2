package proc

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"math/bits"
	"strings"
)

// MarkerVar is the environment variable that marks a session's
// processes. Its value is a list of tokens separated by ':', one per
// enclosing session: a session started from within another session
// (flow running flow) appends its own token to the one it inherits, so
// that both sessions recognise the process as theirs.
const MarkerVar = "FLOW_SESSION_ID"

// markerEntryCap bounds the length of an environment entry that is
// examined for a marker; a longer entry cannot be a marker of any
// sensible nesting depth and is skipped.
const markerEntryCap = 64 << 10

// newToken returns a fresh session token: random, and free of ':' and
// of bytes that the environment cannot hold.
func newToken() string { return rand.Text() }

// withMarker returns a copy of env in which MarkerVar lists token after
// whatever MarkerVar values env already holds. Duplicate MarkerVar
// entries are merged into one: a shell keeps only one of them when it
// passes its environment on, so a token in the other would be lost.
// Any other name env holds more than once keeps its last value, at the
// place of its first, as exec.Cmd does: the environment given to
// execve holds each name once.
func withMarker(env []string, token string) []string {
	out := make([]string, 0, len(env)+1)
	var tokens []string
	var small [256]uint16
	seen := envIndex(small[:])
	if 2*len(env) > len(small) {
		seen = make(envIndex, 1<<bits.Len(uint(2*len(env))))
	}
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, MarkerVar+"="); ok {
			if v != "" {
				tokens = append(tokens, v)
			}
			continue
		}
		k, _, ok := strings.Cut(e, "=")
		if !ok {
			if e != "" {
				out = append(out, e) // not KEY=value: left as it is
			}
			continue
		}
		if i, dup := seen.add(k, out, len(out)); dup {
			out[i] = e
			continue
		}
		out = append(out, e)
	}
	tokens = append(tokens, token)
	return append(out, MarkerVar+"="+strings.Join(tokens, ":"))
}

// envIndex finds the entries of an environment by name: an
// open-addressing table of entry numbers plus one (0 for an empty slot),
// whose length is a power of two, so that a session's environment is
// deduplicated without a map. withMarker keeps it on the stack for
// environments of up to 128 names.
type envIndex []uint16

// add records that name k is at entry i of env, unless an entry of env
// already has that name: then it returns that entry's number and true.
// Entries from the 65,535th on are not indexed (every name reads as
// new).
func (x envIndex) add(k string, env []string, i int) (int, bool) {
	if i >= 1<<16-1 {
		return 0, false
	}
	mask := uint32(len(x) - 1)
	h := uint32(2166136261) // FNV-1a
	for j := 0; j < len(k); j++ {
		h = (h ^ uint32(k[j])) * 16777619
	}
	for h &= mask; ; h = (h + 1) & mask {
		n := x[h]
		if n == 0 {
			x[h] = uint16(i + 1)
			return 0, false
		}
		if name, _, _ := strings.Cut(env[n-1], "="); name == k {
			return int(n - 1), true
		}
	}
}

// hasMarker reports whether the NUL-separated environment read from r
// (the format of /proc/PID/environ) carries token in a MarkerVar entry.
// It reads r to the end at most once and never holds more than
// markerEntryCap bytes of it.
func hasMarker(r io.Reader, token string) bool {
	return hasMarkerBuffered(bufio.NewReaderSize(r, markerEntryCap), token)
}

// hasMarkerBuffered is hasMarker reading through br, which a caller
// that reads many environments reuses; its size bounds the entries
// examined.
func hasMarkerBuffered(br *bufio.Reader, token string) bool {
	if token == "" {
		return false
	}
	for {
		entry, err := br.ReadSlice(0)
		if errors.Is(err, bufio.ErrBufferFull) {
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = br.ReadSlice(0)
			}
			if err != nil {
				return false
			}
			continue
		}
		if entryHasToken(bytes.TrimSuffix(entry, []byte{0}), token) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// entryHasToken reports whether one environment entry is a MarkerVar
// entry whose list holds token.
func entryHasToken(entry []byte, token string) bool {
	v, ok := bytes.CutPrefix(entry, []byte(MarkerVar+"="))
	if !ok {
		return false
	}
	for len(v) > 0 {
		var t []byte
		t, v, _ = bytes.Cut(v, []byte{':'})
		if string(t) == token {
			return true
		}
	}
	return false
}

// validToken reports whether token could have been made by newToken,
// or is at least one that no list could match by accident.
func validToken(token string) bool {
	return token != "" && !strings.ContainsAny(token, ":=\x00")
}
