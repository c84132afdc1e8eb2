package wftest_test

import (
	"slices"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/runner/wftest"
)

func TestExpand(t *testing.T) {
	fs := afero.NewMemMapFs()
	for _, name := range []string{"/w/b.test.hcl", "/w/a.test.yaml", "/w/c.test.yml", "/w/a.yaml", "/w/a.hcl", "/w/d.test.hcl/x", "/x.test.yaml"} {
		if err := afero.WriteFile(fs, name, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := wftest.Expand(fs, []string{"/w", "/x.test.yaml"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/w/a.test.yaml", "/w/b.test.hcl", "/w/c.test.yml", "/x.test.yaml"}
	if !slices.Equal(got, want) {
		t.Errorf("Expand = %v, want %v", got, want)
	}
	if _, err := wftest.Expand(fs, []string{"/nope"}); err == nil {
		t.Error("Expand of a missing path: no error")
	}
}
