package gates

import (
	"errors"
	"fmt"
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
		`run.usage.cost_usd < 10`,
		`steps.tests.usage.tokens_out < 100000 && run.usage.sessions <= 3`,
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
			if tooLarge := new(TooLargeError); !errors.As(err, &tooLarge) {
				checkFuzzError(t, src, err)
			}
		}
	})
}

// FuzzCompilerAgrees checks that compiling through one long-lived
// Compiler gives the same results as the package function, whatever
// was compiled through it before.
func FuzzCompilerAgrees(f *testing.F) {
	for _, s := range []string{
		`signals.PASS && !signals.FAIL`,
		`steps.tests.exit_code == 0`,
		`exit_code`,
		`output + "x" == "x"`,
		`join(["a"], ",") + report.x`,
		`let x = 1; x + 1`,
		`steps.testz.status`,
		`1 +`,
	} {
		f.Add(s, true)
	}
	comp := NewCompiler(testScope)
	f.Fuzz(func(t *testing.T, src string, asBool bool) {
		kind := Any
		if asBool {
			kind = Bool
		}
		p1, err1 := Compile(src, testScope, kind)
		p2, err2 := comp.Compile(src, kind)
		if fmt.Sprint(err1) != fmt.Sprint(err2) {
			t.Fatalf("Compile(%q) error = %v, Compiler.Compile error = %v", src, err1, err2)
		}
		if err1 != nil {
			if *err1.(*Error) != *err2.(*Error) {
				t.Fatalf("Compile(%q) error = %+v, Compiler.Compile error = %+v", src, err1, err2)
			}
			return
		}
		v1, err1 := p1.Eval(&Env{})
		v2, err2 := p2.Eval(&Env{})
		if fmt.Sprint(v1, err1) != fmt.Sprint(v2, err2) {
			t.Fatalf("Eval(%q) = %v, %v from Compile and %v, %v from Compiler.Compile", src, v1, err1, v2, err2)
		}
	})
}
