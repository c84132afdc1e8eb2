package core

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestShorten: an error kept in an event is at most MaxExcerpt bytes,
// its head and tail around a marker, cut at character boundaries.
func TestShorten(t *testing.T) {
	if got := shorten("short"); got != "short" {
		t.Errorf("shorten(short) = %q", got)
	}
	huge := strings.Repeat("x", 1<<20)
	if got := shorten(huge); len(got) > MaxExcerpt || !strings.Contains(got, "bytes cut") {
		t.Errorf("shorten kept %d bytes: %.80q", len(got), got)
	}
	if got := shorten(strings.Repeat("é", 4000)); !strings.HasPrefix(got, "é") || !strings.HasSuffix(got, "é") || !utf8.ValidString(got) {
		t.Errorf("shorten cut a character: %.40q", got)
	}
}
