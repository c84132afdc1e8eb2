package gates

import (
	"errors"
	"fmt"
	"sync"
	"testing"
)

// bigScope returns a scope of n steps, s0 to s(n-1), and the var target.
func bigScope(n int) Scope {
	s := Scope{Vars: []string{"target"}}
	for i := range n {
		s.Steps = append(s.Steps, fmt.Sprintf("s%d", i))
	}
	return s
}

func TestCompilerKinds(t *testing.T) {
	c := NewCompiler(testScope)
	for range 2 {
		if _, err := c.Compile(`exit_code`, Bool); err == nil {
			t.Fatal("Compile(exit_code, Bool) succeeded, want an error")
		}
		p, err := c.Compile(`exit_code`, Any)
		if err != nil {
			t.Fatalf("Compile(exit_code, Any): %v", err)
		}
		if got, err := p.Eval(testEnv()); got != 3 || err != nil {
			t.Fatalf("Eval = %v, %v; want 3", got, err)
		}
		p, err = c.Compile(`exit_code == 3`, Bool)
		if err != nil {
			t.Fatalf("Compile(exit_code == 3, Bool): %v", err)
		}
		if ok, err := p.EvalBool(testEnv()); !ok || err != nil {
			t.Fatalf("EvalBool = %v, %v; want true", ok, err)
		}
	}
}

func TestCompilerCopiesScope(t *testing.T) {
	scope := Scope{Steps: []string{"a"}, Vars: []string{"v"}}
	c := NewCompiler(scope)
	scope.Steps[0], scope.Vars[0] = "b", "w"
	if _, err := c.Compile(`steps.a.status == "" && vars.v == ""`, Bool); err != nil {
		t.Fatal(err)
	}
	_, err := c.Compile(`steps.b.status == ""`, Bool)
	var e *Error
	if !errors.As(err, &e) || e.Msg != `unknown step "b"` {
		t.Fatalf("error = %v, want unknown step \"b\"", err)
	}
}

// TestCompilerManyCompiles compiles, through one Compiler, expressions
// whose nodes together exceed MaxNodes: the limit is per expression.
func TestCompilerManyCompiles(t *testing.T) {
	c := NewCompiler(testScope)
	for i := range MaxNodes/5 + 10 {
		if _, err := c.Compile(`steps.tests.exit_code == 0 && attempt < 3`, Bool); err != nil {
			t.Fatalf("compilation %d: %v", i, err)
		}
	}
}

// TestCompilerConcurrent compiles through one Compiler from several
// goroutines while the programs it returned earlier are evaluated.
func TestCompilerConcurrent(t *testing.T) {
	c := NewCompiler(testScope)
	first, err := c.Compile(`steps.tests.exit_code == 0 && len(join(map(1..10, output + "x"))) > 0`, Bool)
	if err != nil {
		t.Fatal(err)
	}
	env := testEnv()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 20 {
				src := fmt.Sprintf(`run.iteration + %d == %d && feedback.step == "code_review"`, i, i+2)
				p, err := c.Compile(src, Bool)
				if err != nil {
					errs <- err
					return
				}
				if ok, err := p.EvalBool(env); !ok || err != nil {
					errs <- fmt.Errorf("goroutine %d: EvalBool(%q) = %v, %v", g, src, ok, err)
					return
				}
				tmpl, err := c.CompileTemplate(`{{ steps.tests.status }} {{ check.output }}`)
				if err != nil {
					errs <- err
					return
				}
				if s, err := tmpl.Render(env); s != "succeeded lint" || err != nil {
					errs <- fmt.Errorf("Render = %q, %v", s, err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for range 20 {
				if ok, err := first.EvalBool(env); !ok || err != nil {
					errs <- fmt.Errorf("EvalBool = %v, %v", ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

const (
	benchGate     = `signals.PASS && !signals.FAIL && steps.s42.exit_code == 0`
	benchTemplate = `make {{ vars.target }} AFTER={{ steps.s42.status }}`
)

func BenchmarkCompileGate(b *testing.B) {
	scope := bigScope(5000)
	b.Run("func", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Compile(benchGate, scope, Bool); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Compiler", func(b *testing.B) {
		c := NewCompiler(scope)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Compile(benchGate, Bool); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkCompileTemplate(b *testing.B) {
	scope := bigScope(5000)
	b.Run("func", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := CompileTemplate(benchTemplate, scope); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Compiler", func(b *testing.B) {
		c := NewCompiler(scope)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.CompileTemplate(benchTemplate); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkNewCompiler(b *testing.B) {
	scope := bigScope(5000)
	b.ReportAllocs()
	for b.Loop() {
		NewCompiler(scope)
	}
}

// TestCompilerRemembers: an expression compiled again with the same
// source and kind is not compiled again; a different kind is.
func TestCompilerRemembers(t *testing.T) {
	c := NewCompiler(Scope{Steps: []string{"a"}})
	p1, err := c.Compile(`exit_code == 0`, Bool)
	if err != nil {
		t.Fatal(err)
	}
	p2, _ := c.Compile(`exit_code == 0`, Bool)
	p3, _ := c.Compile(`exit_code == 0`, Any)
	if p1 != p2 || p1 == p3 {
		t.Errorf("same source and kind: %p %p; other kind %p", p1, p2, p3)
	}
	if _, err := c.Compile(`nope ==`, Bool); err == nil {
		t.Fatal("a broken expression compiled")
	}
	if _, err := c.Compile(`nope ==`, Bool); err == nil {
		t.Error("a broken expression compiled the second time")
	}
}
