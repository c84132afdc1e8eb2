package config_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestBudgetNumbers: a budget's values are refused at load, where they
// are written, unless they are positive finite numbers (whole numbers
// for tokens and sessions): NaN, the infinities, numbers too large for
// a float, zero and negative numbers, whichever way they are written.
func TestBudgetNumbers(t *testing.T) {
	const (
		positive = "want a positive number"
		integer  = "want a positive integer"
	)
	tests := []struct {
		format, key, value string
		want               string // the message after "budget.<key>: "
	}{
		{"yaml", "cost_usd", ".nan", positive + `, got ".nan"`},
		{"yaml", "cost_usd", ".NaN", positive + `, got ".NaN"`},
		{"yaml", "cost_usd", `"NaN"`, positive + `, got "NaN"`},
		{"yaml", "cost_usd", ".inf", positive + `, got ".inf"`},
		{"yaml", "cost_usd", "+.inf", positive + `, got "+.inf"`},
		{"yaml", "cost_usd", "-.inf", positive + `, got "-.inf"`},
		{"yaml", "cost_usd", `"Inf"`, positive + `, got "Inf"`},
		{"yaml", "cost_usd", `"-Infinity"`, positive + `, got "-Infinity"`},
		{"yaml", "cost_usd", "1e400", positive + `, got "1e400"`},
		{"yaml", "cost_usd", "0x10", positive + `, got "0x10"`},
		{"yaml", "cost_usd", "-2", "must be greater than 0, got -2"},
		{"yaml", "cost_usd", "-0.0", "must be greater than 0, got -0.0"},
		{"yaml", "cost_usd", "0", "must be greater than 0, got 0"},
		{"yaml", "cost_usd", "1e-400", "must be greater than 0, got 1e-400"},
		{"yaml", "tokens", ".nan", integer + `, got ".nan"`},
		{"yaml", "tokens", ".inf", integer + `, got ".inf"`},
		{"yaml", "tokens", "1e3", integer + `, got "1e3"`},
		{"yaml", "tokens", "99999999999999999999", integer + `, got "99999999999999999999"`},
		{"yaml", "tokens", "-5", "must be at least 1, got -5"},
		{"yaml", "sessions", "-.inf", integer + `, got "-.inf"`},
		{"yaml", "sessions", "-1", "must be at least 1, got -1"},
		{"hcl", "cost_usd", `"NaN"`, positive + `, got "NaN"`},
		{"hcl", "cost_usd", `"+Inf"`, positive + `, got "+Inf"`},
		{"hcl", "cost_usd", "1e309", positive + `, got "1` + strings.Repeat("0", 309) + `"`},
		{"hcl", "cost_usd", "-1.5", "must be greater than 0, got -1.5"},
		{"hcl", "cost_usd", "-0", "must be greater than 0, got -0"},
		{"hcl", "tokens", `"Inf"`, integer + `, got "Inf"`},
		{"hcl", "tokens", "-3", "must be at least 1, got -3"},
		{"hcl", "sessions", "2.5", integer + `, got "2.5"`},
	}
	for _, tt := range tests {
		t.Run(tt.format+"/"+tt.key+"="+tt.value, func(t *testing.T) {
			// The workflow's budget and a step's, the value at the same
			// column in both.
			src := fmt.Sprintf("name: x\nbudget: {%s: %s}\nsteps:\n  - {id: s, run: r, budget: {%s: %s}}\n", tt.key, tt.value, tt.key, tt.value)
			col := len("budget: {"+tt.key+": ") + 1
			lines := []int{2, 4}
			if tt.format == "hcl" {
				src = fmt.Sprintf("name = \"x\"\nbudget {\n  %s = %s\n}\nstep \"s\" {\n  run = \"r\"\n  budget {\n  %s = %s\n  }\n}\n", tt.key, tt.value, tt.key, tt.value)
				col = len("  "+tt.key+" = ") + 1
				lines = []int{3, 8}
			}
			var want []string
			for _, line := range lines {
				c := col
				if tt.format == "yaml" && line == 4 {
					c += len("  - {id: s, run: r, ")
				}
				want = append(want, fmt.Sprintf("%d:%d budget.%s: %s", line, c, tt.key, tt.want))
			}
			got := diagLines(t, tt.format, src)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("diagnostics:\n%s\nwant:\n%s\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), src)
			}
		})
	}
}
