// Package wiretest fills a domain value's every field, so that a test of
// a wire conversion (node/api) fails when a field does not cross: a
// field added to a type and not to its message.
package wiretest

import (
	"reflect"
	"strings"
	"time"
)

// When is the time Fill gives every time.Time field (with a zone offset,
// which the wire keeps).
var When = time.Date(2026, 12, 1, 23, 4, 5, 123456789, time.FixedZone("", 3600))

// Fill sets every exported field of *p that JSON carries (no `json:"-"`)
// to a value that is not its zero: strings "x", numbers 1, booleans true,
// times When, one element per slice and map, and pointers to filled
// values.
func Fill(p any) {
	fill(reflect.ValueOf(p).Elem())
}

var timeType = reflect.TypeOf(time.Time{})

func fill(v reflect.Value) {
	if v.Type() == timeType {
		v.Set(reflect.ValueOf(When))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Slice:
		s := reflect.MakeSlice(v.Type(), 1, 1)
		fill(s.Index(0))
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		m.SetMapIndex(k, e)
		v.Set(m)
	case reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		fill(p.Elem())
		v.Set(p)
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() || strings.HasPrefix(f.Tag.Get("json"), "-") {
				continue
			}
			fill(v.Field(i))
		}
	}
}
