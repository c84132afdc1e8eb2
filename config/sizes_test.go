package config_test

import (
	"strings"
	"testing"

	"github.com/flow-run/flow/config"
	"github.com/google/go-cmp/cmp"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want int64
		err  string
	}{
		{"1048576", 1 << 20, ""},
		{"64MiB", 64 << 20, ""},
		{"64 MiB", 64 << 20, ""},
		{" 100KiB ", 100 << 10, ""},
		{"1MB", 1_000_000, ""},
		{"3 KB", 3000, ""},
		{"2GB", 2_000_000_000, ""},
		{"1GiB", 1 << 30, ""},
		{"512B", 512, ""},
		{"0", 0, "more than 0"},
		{"0MiB", 0, "more than 0"},
		{"-1", 0, "more than 0"},
		{"-5 MiB", 0, "more than 0"},
		{"", 0, "invalid size"},
		{"MiB", 0, "invalid size"},
		{"64mib", 0, "invalid size"},
		{"64 MiB MiB", 0, "invalid size"},
		{"1.5MiB", 0, "invalid size"},
		{"1e6", 0, "invalid size"},
		{"0x10", 0, "invalid size"},
		{"64M", 0, "invalid size"},
		{"9223372036854775807", 1<<63 - 1, ""},
		{"9223372036854775808", 0, "too large"},
		{"9000000000 GiB", 0, "too large"},
		{strings.Repeat("9", 10000), 0, "too large"},
	}
	for _, tt := range tests {
		got, err := config.ParseSize(tt.in)
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("ParseSize(%.20q) = %d, %v; want %d", tt.in, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ParseSize(%.20q) = %d, %v; want an error with %q", tt.in, got, err, tt.err)
		}
	}
}

// TestLimits checks the sizes of defaults in both formats: unset, they
// are the defaults; set, YAML and HCL give the same model and digest.
func TestLimits(t *testing.T) {
	bare := parse(t, "yaml", "name: x\nsteps:\n  - {id: a, run: a}\n")
	want := config.Limits{Prompt: config.DefaultPromptLimit, Command: config.DefaultCommandLimit, Report: config.DefaultReportLimit, Log: config.DefaultLogLimit, MaxItems: config.DefaultMaxItems}
	if got := bare.Limits(); got != want || bare.Defaults.Limits != (config.Limits{}) {
		t.Errorf("Limits() = %+v, Defaults.Limits = %+v; want %+v and zero", got, bare.Defaults.Limits, want)
	}
	if want != (config.Limits{Prompt: 1 << 20, Command: 100 << 10, Report: 1 << 20, Log: 64 << 20, MaxItems: 10000}) {
		t.Errorf("default limits %+v are not the defaults docs/reference/limits.md lists", want)
	}
	y := parse(t, "yaml", "name: x\ndefaults:\n  prompt_limit: 2MiB\n  command_limit: 65536\n  log_limit: 1 GB\n  max_items: 50\nsteps:\n  - {id: a, run: a}\n")
	h := parse(t, "hcl", "name = \"x\"\ndefaults {\n  prompt_limit = \"2MiB\"\n  command_limit = 65536\n  log_limit = \"1 GB\"\n  max_items = 50\n}\nstep \"a\" { run = \"a\" }\n")
	set := config.Limits{Prompt: 2 << 20, Command: 65536, Log: 1_000_000_000, MaxItems: 50}
	if y.Defaults.Limits != set {
		t.Errorf("YAML Defaults.Limits = %+v, want %+v", y.Defaults.Limits, set)
	}
	if got := y.Limits(); got != (config.Limits{Prompt: 2 << 20, Command: 65536, Report: config.DefaultReportLimit, Log: 1_000_000_000, MaxItems: 50}) {
		t.Errorf("YAML Limits() = %+v", got)
	}
	if diff := cmp.Diff(y, h, ignorePositions); diff != "" {
		t.Errorf("YAML and HCL models differ (-yaml +hcl):\n%s", diff)
	}
	if y.Digest() != h.Digest() || y.Digest() == bare.Digest() {
		t.Errorf("digests: yaml %s hcl %s bare %s", y.Digest(), h.Digest(), bare.Digest())
	}
	if spec, _ := y.Spec(); !strings.Contains(string(spec), `"prompt_limit": 2097152`) {
		t.Errorf("spec lacks prompt_limit:\n%s", spec)
	}
	if spec, _ := bare.Spec(); strings.Contains(string(spec), "limit\"") {
		t.Errorf("spec of a workflow setting no size names one:\n%s", spec)
	}
}

func TestLimitErrors(t *testing.T) {
	tests := []struct {
		name, format, src string
		line, col         int
		text              string
	}{
		{"zero", "yaml", "  log_limit: 0\n", 4, 14, "log_limit: size \"0\": must be more than 0"},
		{"negative", "yaml", "  report_limit: -3\n", 4, 17, "more than 0"},
		{"no unit", "yaml", "  prompt_limit: 64 megs\n", 4, 17, "invalid size"},
		{"a list", "yaml", "  prompt_limit: [1]\n", 4, 17, "want a string, got a list"},
		{"absurd prompt", "yaml", "  prompt_limit: 2GiB\n", 4, 17, "prompt_limit: 2GiB is more than 1 GiB"},
		{"absurd command", "yaml", "  command_limit: 1073741825\n", 4, 18, "more than 1 GiB"},
		{"absurd log", "yaml", "  log_limit: 65GiB\n", 4, 14, "log_limit: 65GiB is more than 64 GiB"},
		{"typo", "yaml", "  log_limt: 1MiB\n", 4, 3, `did you mean "log_limit"`},
		{"hcl zero", "hcl", "  log_limit = 0\n", 3, 15, "must be more than 0"},
		{"hcl fraction", "hcl", "  prompt_limit = 1.5\n", 3, 18, "invalid size"},
		{"hcl absurd report", "hcl", "  report_limit = \"2 GiB\"\n", 3, 18, "more than 1 GiB"},
		{"hcl huge number", "hcl", "  log_limit = 1e300\n", 3, 15, "too large"},
		{"hcl typo", "hcl", "  report_limt = 1\n", 3, 3, `did you mean "report_limit"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var src string
			if tt.format == "yaml" {
				src = "name: x\nsteps: [{id: a, run: a}]\ndefaults:\n" + tt.src
			} else {
				src = "name = \"x\"\ndefaults {\n" + tt.src + "}\nstep \"a\" { run = \"a\" }\n"
			}
			d := oneDiag(t, tt.format, src)
			if d.Pos.Line != tt.line || d.Pos.Col != tt.col || !strings.Contains(d.Message, tt.text) {
				t.Errorf("got %d:%d %q, want %d:%d %q", d.Pos.Line, d.Pos.Col, d.Message, tt.line, tt.col, tt.text)
			}
		})
	}
}
