package events

import (
	"fmt"
	"reflect"
	"strings"
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
	return l.walk(reflect.ValueOf(ev.Data), "data")
}

var timeType = reflect.TypeFor[time.Time]()

func (l Limits) walk(v reflect.Value, path string) error {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct || v.Type() == timeType {
		return nil
	}
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		if err := l.value(v.Field(i), path+"."+name, l.limitOf(f.Tag.Get("limit"))); err != nil {
			return err
		}
	}
	return nil
}

func (l Limits) value(v reflect.Value, path string, limit int) error {
	switch v.Kind() {
	case reflect.String:
		if n := v.Len(); n > limit {
			return fmt.Errorf("%w: %s is %d bytes, the limit is %d", ErrTooLarge, path, n, limit)
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if err := l.value(v.Index(i), fmt.Sprintf("%s[%d]", path, i), limit); err != nil {
				return err
			}
		}
	case reflect.Struct, reflect.Pointer:
		return l.walk(v, path)
	}
	return nil
}
