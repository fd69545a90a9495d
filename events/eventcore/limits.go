package eventcore

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"
)

// Limits bound the size of an event's string fields, in bytes. Anyone
// with a NATS client can publish on fleet.>, and what a reader folds ends
// up in the roster, the turns and every HTTP answer, so a reader refuses
// (skips and counts, like any invalid message) an event with a field over
// its limit, and Append refuses to write one. Each field is in one of
// three classes, named by its `limit` struct tag:
//
//   - untagged: an id, a name or an enum value (agent, session id, model,
//     reason, …) and every envelope attribute: ID bytes;
//   - `limit:"line"`: a path, a URL or a one-line note: Line bytes;
//   - `limit:"text"`: free text (a turn's text, a reply, a message, a
//     plan): Text bytes.
//
// Elements of string slices are bounded like their field.
type Limits struct {
	// ID bounds ids, names and enum values. Default 256.
	ID int
	// Line bounds paths, URLs and short notes. Default 4096.
	Line int
	// Text bounds free text. Default DefaultTextLimit.
	Text int
}

// DefaultTextLimit is the default Limits.Text: a 1 MiB turn text (the
// lead shim's default maximum) and a 64 KiB margin.
const DefaultTextLimit = 1<<20 + 64<<10

// DefaultLimits are the limits NewRegistry uses unless told otherwise.
func DefaultLimits() Limits { return Limits{ID: 256, Line: 4096, Text: DefaultTextLimit} }

func (l *Limits) setDefaults() {
	d := DefaultLimits()
	if l.ID <= 0 {
		l.ID = d.ID
	}
	if l.Line <= 0 {
		l.Line = d.Line
	}
	if l.Text <= 0 {
		l.Text = d.Text
	}
}

// limitOf is the byte limit of a field with the given `limit` tag.
func (l Limits) limitOf(tag string) int {
	switch tag {
	case "text":
		return l.Text
	case "line":
		return l.Line
	default:
		return l.ID
	}
}

// check reports the first string field of ev (envelope or data) over its
// limit, as ErrTooLarge.
func (l Limits) check(ev Event) error {
	for _, f := range []struct{ name, v string }{
		{"id", ev.ID}, {"source", ev.Source}, {"subject", ev.Subject},
		{"correlationid", ev.CorrelationID}, {"causationid", ev.CausationID},
	} {
		if len(f.v) > l.ID {
			return fmt.Errorf("%w: %s is %d bytes, the limit is %d", ErrTooLarge, f.name, len(f.v), l.ID)
		}
	}
	if ev.Data == nil {
		return nil
	}
	if e := l.walk(reflect.ValueOf(ev.Data)); e != nil {
		return e.under("data")
	}
	return nil
}

var timeType = reflect.TypeFor[time.Time]()

// tooLarge is a field over its limit, its path built as the walk unwinds:
// the path is only spelled out for the rare event that is refused, not
// concatenated for every field of every event a reader decodes.
type tooLarge struct {
	path     string
	n, limit int
}

func (e *tooLarge) Error() string {
	return fmt.Sprintf("%s: %s is %d bytes, the limit is %d", ErrTooLarge, e.path, e.n, e.limit)
}

func (e *tooLarge) Unwrap() error { return ErrTooLarge }

func (e *tooLarge) under(name string) *tooLarge {
	if e.path == "" || strings.HasPrefix(e.path, "[") {
		e.path = name + e.path
	} else {
		e.path = name + "." + e.path
	}
	return e
}

// field is one exported field of a struct that may hold strings, with its
// JSON name and `limit` class.
type field struct {
	index int
	name  string
	class string
}

// plans caches each struct type's fields that may hold strings: a reader
// checks every event it decodes, and looking struct tags up by reflection
// per event was a third of decoding.
var plans sync.Map // reflect.Type → []field

func planOf(t reflect.Type) []field {
	if p, ok := plans.Load(t); ok {
		return p.([]field)
	}
	var fs []field
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || !mayHoldString(f.Type, 0) {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		fs = append(fs, field{index: i, name: name, class: f.Tag.Get("limit")})
	}
	plans.Store(t, fs)
	return fs
}

// mayHoldString reports whether the walk can find a string in a value of
// t. Maps and interfaces are not walked (their values are bounded by the
// message size only).
func mayHoldString(t reflect.Type, depth int) bool {
	if depth > 8 {
		return true
	}
	switch t.Kind() {
	case reflect.String:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return mayHoldString(t.Elem(), depth+1)
	case reflect.Struct:
		if t == timeType {
			return false
		}
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() && mayHoldString(f.Type, depth+1) {
				return true
			}
		}
	}
	return false
}

func (l Limits) walk(v reflect.Value) *tooLarge {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct || v.Type() == timeType {
		return nil
	}
	for _, f := range planOf(v.Type()) {
		if e := l.value(v.Field(f.index), l.limitOf(f.class)); e != nil {
			return e.under(f.name)
		}
	}
	return nil
}

func (l Limits) value(v reflect.Value, limit int) *tooLarge {
	switch v.Kind() {
	case reflect.String:
		if n := v.Len(); n > limit {
			return &tooLarge{n: n, limit: limit}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if e := l.value(v.Index(i), limit); e != nil {
				return e.under(fmt.Sprintf("[%d]", i))
			}
		}
	case reflect.Struct, reflect.Pointer:
		return l.walk(v)
	}
	return nil
}
