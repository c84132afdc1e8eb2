package gates

import (
	"errors"
	"testing"
)

// checkFuzzError fails unless err is nil or an *Error with a valid
// position in src.
func checkFuzzError(t *testing.T, src string, err error) {
	if err == nil {
		return
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not *Error", err, err)
	}
	checkPosition(t, src, e)
}

func FuzzCompileExpr(f *testing.F) {
	for _, s := range []string{
		`signals.PASS && !signals.FAIL`,
		`steps.tests.exit_code == 0`,
		`steps["code_review"].metrics.severity != "none"`,
		`vars.feature == "x"`,
		`map(1..3, # * 2)`,
		`let x = 1; x + 1`,
		`"héllo" + 1`,
		"signals.PASS &&\n steps.tset.status",
		`read_json("r.json").count > 2`,
		`now().Sub(run.started_at) > duration("1h")`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		p, err := Compile(src, testScope, Bool)
		checkFuzzError(t, src, err)
		if err == nil {
			_, err = p.EvalBool(&Env{})
			checkFuzzError(t, src, err)
		}
		_, err = Compile(src, testScope, Any)
		checkFuzzError(t, src, err)
	})
}

func FuzzCompileTemplate(f *testing.F) {
	for _, s := range []string{
		`Write PLAN.md for {{ vars.feature }}.`,
		`{{ "}}" }} and {{ {"a": 1} }}`,
		`{{ steps.testz.output }}`,
		"line\n{{ 1 + }}",
		`{{`,
		`}} {{ }}`,
		"{{ `x` }}{{ 'y' }}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		tmpl, err := CompileTemplate(src, testScope)
		checkFuzzError(t, src, err)
		if err == nil {
			_, err = tmpl.Render(&Env{})
			checkFuzzError(t, src, err)
		}
	})
}
