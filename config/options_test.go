package config

import (
	"reflect"
	"testing"

	"github.com/spf13/afero"
)

// TestIsDefaultSeesEveryField sets each field of StepOptions in turn:
// a field isDefault does not look at would let a step that sets it
// share the defaults, and lose it.
func TestIsDefaultSeesEveryField(t *testing.T) {
	if !defaultOptions().isDefault() {
		t.Fatal("defaultOptions() is not the defaults")
	}
	typ := reflect.TypeFor[StepOptions]()
	for i := range typ.NumField() {
		o := defaultOptions()
		f := reflect.ValueOf(o).Elem().Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("none")
		case reflect.Pointer:
			f.Set(reflect.New(f.Type().Elem()))
		case reflect.Slice:
			f.Set(reflect.MakeSlice(f.Type(), 1, 1))
		case reflect.Map:
			f.Set(reflect.MakeMap(f.Type()))
		default:
			t.Fatalf("field %s: kind %s is not handled here", typ.Field(i).Name, f.Kind())
		}
		if o.isDefault() {
			t.Errorf("isDefault() is true with %s set", typ.Field(i).Name)
		}
	}
}

func TestPlainStepsShareOptions(t *testing.T) {
	const src = `name: share
steps:
  - id: a
    run: "true"
  - id: b
    run: "true"
    timeout: 5m
  - id: c
    run: "true"
  - id: each
    for_each: ["x", "y"]
    steps:
      - id: d
        run: "true"
  - id: e
    run: "true"
    feedback: none
`
	w, err := Parse(afero.NewMemMapFs(), "share.yaml", "yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	a, b, c, d, e := w.Step("a"), w.Step("b"), w.Step("c"), w.Step("d"), w.Step("e")
	if a.StepOptions != c.StepOptions || a.StepOptions != d.StepOptions {
		t.Errorf("plain steps a, c and d do not share their options")
	}
	if a.Feedback != "append" {
		t.Errorf("shared options: feedback %q, want append", a.Feedback)
	}
	if b.StepOptions == a.StepOptions || b.Timeout == nil || b.Timeout.D.Minutes() != 5 {
		t.Errorf("b's timeout: %+v", b.StepOptions)
	}
	if e.StepOptions == a.StepOptions || e.Feedback != "none" {
		t.Errorf("e's feedback: %q", e.Feedback)
	}
	if each := w.Step("each"); each.StepOptions == a.StepOptions || each.ForEach == nil {
		t.Errorf("the loop step shares the defaults")
	}
}
