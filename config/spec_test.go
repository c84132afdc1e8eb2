package config

import (
	"bytes"
	"testing"

	"github.com/spf13/afero"
)

// TestDigestsKept: the canonical form, and so the digest a run records,
// of workflows using every key stays what it was; a change here is a
// change of every recorded run's digest.
func TestDigestsKept(t *testing.T) {
	tests := []struct{ file, digest string }{
		{"testdata/emit/everything.yaml", "sha256:faca43a61420266454373506801608e3e4fe347574f1ea297f0a2518af1b4bdd"},
		{"testdata/loops/stories.hcl", "sha256:2a4316b72e5f44e7025460c4cedbc9f3ed3da211906ee1885c234d627ad61399"},
		{"testdata/pairs/review.yaml", "sha256:7d01ed2a6349487ccc9697bc11b849329bf5aec59eadac464ca25d1a38ff9cfb"},
		{"testdata/notify/notify.hcl", "sha256:1aa45e24bdb8770d8c46a288fa9fdf588eab91bcf94c3fd751d8b112616522fe"},
		{"testdata/agents/presets.yaml", "sha256:fc63233d7595baba1c8341bd23fe601db05be9639440c6313129ae979c227a7d"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			w, err := Load(afero.NewOsFs(), tt.file)
			if err != nil {
				t.Fatal(err)
			}
			if got := w.Digest(); got != tt.digest {
				t.Errorf("digest %s, want %s", got, tt.digest)
			}
			spec, err := w.Spec()
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if err := w.WriteSpec(&b); err != nil || !bytes.Equal(b.Bytes(), spec) {
				t.Errorf("WriteSpec wrote %d bytes (%v), Spec %d", b.Len(), err, len(spec))
			}
		})
	}
}
