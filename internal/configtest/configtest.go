// Package configtest holds what tests of loaded workflows share.
package configtest

import (
	"reflect"

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
