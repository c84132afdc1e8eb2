// Package configtest holds what tests of loaded workflows share.
package configtest

import (
	"reflect"
	"testing"

	"github.com/spf13/afero"

	"github.com/flow-run/flow/config"
)

// ZeroPos zeroes every config.Pos reachable from ptr, a pointer, so that
// a model loaded from YAML compares equal to its HCL twin.
func ZeroPos(ptr any) {
	zeroPos(reflect.ValueOf(ptr).Elem())
}

func zeroPos(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			zeroPos(v.Elem())
		}
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(config.Pos{}) {
			v.SetZero()
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				zeroPos(v.Field(i))
			}
		}
	case reflect.Slice:
		for i := range v.Len() {
			zeroPos(v.Index(i))
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			e := reflect.New(iter.Value().Type()).Elem()
			e.Set(iter.Value())
			zeroPos(e)
			v.SetMapIndex(iter.Key(), e)
		}
	}
}

// Load loads the YAML workflow src from a file on a MemMapFs, failing
// tb if it does not load.
func Load(tb testing.TB, src string) *config.Workflow {
	tb.Helper()
	fs := afero.NewMemMapFs()
	if err := afero.WriteFile(fs, "/wf/workflow.yaml", []byte(src), 0o644); err != nil {
		tb.Fatal(err)
	}
	wf, err := config.Load(fs, "/wf/workflow.yaml")
	if err != nil {
		tb.Fatalf("load workflow: %v", err)
	}
	return wf
}
