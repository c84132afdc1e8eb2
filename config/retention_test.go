package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
)

// TestRetention reads defaults.retention from YAML and HCL alike.
func TestRetention(t *testing.T) {
	cases := []struct {
		name, format, src string
		want              config.Retention
	}{
		{"both", "yaml", "name: x\ndefaults:\n  retention: {keep: 5, older_than: 7d}\nsteps:\n  - {id: s, run: r}\n",
			config.Retention{Keep: 5, OlderThan: 7 * 24 * time.Hour}},
		{"keep", "yaml", "name: x\ndefaults:\n  retention:\n    keep: 1\nsteps:\n  - {id: s, run: r}\n",
			config.Retention{Keep: 1}},
		{"older_than", "hcl", "name = \"x\"\ndefaults {\n  retention {\n    older_than = \"36h\"\n  }\n}\nstep \"s\" {\n  run = \"r\"\n}\n",
			config.Retention{OlderThan: 36 * time.Hour}},
		{"both", "hcl", "name = \"x\"\ndefaults {\n  retention {\n    keep = 3\n    older_than = \"2d\"\n  }\n}\nstep \"s\" {\n  run = \"r\"\n}\n",
			config.Retention{Keep: 3, OlderThan: 48 * time.Hour}},
	}
	for _, c := range cases {
		t.Run(c.format+"/"+c.name, func(t *testing.T) {
			w, err := config.Parse(afero.NewMemMapFs(), "wf."+c.format, c.format, []byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			r := w.Defaults.Retention
			if r == nil || r.Keep != c.want.Keep || r.OlderThan != c.want.OlderThan {
				t.Fatalf("retention %+v, want %+v", r, c.want)
			}
			if r.Pos.Line != 3 && r.Pos.Line != 2 {
				t.Errorf("retention at %v", r.Pos)
			}
		})
	}
	w, err := config.Parse(afero.NewMemMapFs(), "wf.yaml", "yaml", []byte("name: x\nsteps:\n  - {id: s, run: r}\n"))
	if err != nil || w.Defaults.Retention != nil {
		t.Errorf("no retention: %+v, %v", w.Defaults.Retention, err)
	}
}

// TestRetentionErrors: a bad value is refused where it is written.
func TestRetentionErrors(t *testing.T) {
	cases := []struct {
		format, body string
		want         string
	}{
		{"yaml", "{keep: 0}", "3:21 defaults.retention.keep: must be at least 1, got 0"},
		{"yaml", "{keep: -2}", "3:21 defaults.retention.keep: must be at least 1, got -2"},
		{"yaml", "{keep: many}", `3:21 defaults.retention.keep: want a positive integer, got "many"`},
		{"yaml", "{older_than: soon}", `3:27 defaults.retention.older_than: want a duration such as 7d or 12h, got "soon"`},
		{"yaml", "{older_than: 7 days}", `3:27 defaults.retention.older_than: invalid duration "7 days" (want e.g. 90s, 30m, 1h30m, 2d)`},
		{"yaml", "{older_than: 0s}", "3:27 defaults.retention.older_than: must be positive, got 0s"},
		{"yaml", "{}", "3:3 defaults.retention is empty: give keep, older_than or both"},
		{"yaml", "{keeps: 2}", `3:15 unknown key "keeps" (did you mean "keep"?)`},
		{"hcl", "{\n    keep = 0\n  }", "4:12 defaults.retention.keep: must be at least 1, got 0"},
		{"hcl", "{\n    older_than = \"steps.s.output\"\n  }", `4:18 defaults.retention.older_than: want a duration such as 7d or 12h, got "steps.s.output"`},
	}
	for _, c := range cases {
		t.Run(c.format+"/"+c.body, func(t *testing.T) {
			src := "name: x\ndefaults:\n  retention: " + c.body + "\nsteps:\n  - {id: s, run: r}\n"
			if c.format == "hcl" {
				src = "name = \"x\"\ndefaults {\n  retention " + c.body + "\n}\nstep \"s\" {\n  run = \"r\"\n}\n"
			}
			got := strings.Join(diagLines(t, c.format, src), "\n")
			if got != c.want {
				t.Errorf("diagnostics:\n%s\nwant:\n%s\n%s", got, c.want, src)
			}
		})
	}
}
