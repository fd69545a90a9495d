package eventcore

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// every is a zero value of each registered data type.
var every = []Data{
	AgentRegistered{}, AgentStatusChanged{}, AgentQueued{}, AgentTyped{}, AgentSubmitted{}, AgentReplied{},
	AgentFailed{}, AgentSession{}, AgentExited{}, AgentDeferred{}, AgentAttention{}, AgentReleased{},
	AgentRestart{}, AgentInbox{}, RoleQueued{}, AgentBudgetWarning{}, RoleBudgetWarning{}, HostUp{},
	HostDown{}, HostHerdr{}, JobCreated{}, JobContext{}, JobSliced{}, JobTask{}, JobDone{},
}

// fill sets every field of v (a pointer) reachable through structs,
// slices and maps: strings to s, numbers to n, bools to true, times to at;
// slices get two elements, maps one entry.
func fill(v reflect.Value, s string, n int, at time.Time) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem(), s, n, at)
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(at))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), s, n, at)
			}
		}
	case reflect.String:
		v.SetString(s)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(n))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(n) + 0.25)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), s, n+i, at)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, s, n, at)
		fill(e, s, n, at)
		v.SetMapIndex(k, e)
	}
}

// v1Event is the envelope as encoding/json writes it: what MarshalJSON
// wrote before it encoded the envelope itself.
func v1Event(t *testing.T, e Event) []byte {
	t.Helper()
	data, err := marshal(e.Data)
	if err != nil {
		t.Fatal(err)
	}
	b, err := marshal(envelope{SpecVersion: SpecVersion, ID: e.ID, Type: e.Type(), Source: e.Source, Subject: e.Subject,
		Time: e.Time.UTC(), DataContentType: "application/json", CorrelationID: e.CorrelationID, CausationID: e.CausationID, Data: data})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// MarshalJSON writes the envelope itself and the data with the v2
// encoder; both must write what encoding/json wrote, byte for byte, for
// every event type, zero and full, with text that JSON must escape or
// (HTML) must not.
func TestMarshalJSONWritesWhatEncodingJSONWrote(t *testing.T) {
	texts := []string{
		"",
		"plain",
		`<script>alert("x & y")</script>`,
		"tab\tnewline\nreturn\rbell\x07nul\x00esc\x1b[31m",
		`back\slash "quoted" /slash/`,
		"ünïcødé 日本語 🚀",
	}
	at := time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	for _, zero := range every {
		for i, text := range texts {
			p := reflect.New(reflect.TypeOf(zero))
			if i > 0 {
				fill(p, text, i*7, at)
			}
			e := Event{ID: "01JD0000000000000000000000", Source: text, Subject: "w1", Time: at, CorrelationID: text, CausationID: text,
				Data: p.Elem().Interface().(Data)}
			got, err := e.MarshalJSON()
			if err != nil {
				t.Fatalf("%s: %v", e.Type(), err)
			}
			if want := v1Event(t, e); !bytes.Equal(got, want) {
				t.Fatalf("%s with %q:\n got %s\nwant %s", e.Type(), text, got, want)
			}
		}
	}
}

// What encoding/json mends or escapes its own way — bytes that are not
// UTF-8, U+2028 — still gives valid JSON that decodes to what
// encoding/json's encoding decodes to.
func TestMarshalJSONOfOddTextDecodesAsEncodingJSONs(t *testing.T) {
	for _, text := range []string{"bad \xff\xfe utf-8", "line\u2028sep\u2029para", "\xc3"} {
		for _, e := range []Event{
			{ID: "01JD0000000000000000000000", Source: "s", Subject: "w1", Time: time.Unix(1, 0), Data: AgentQueued{From: "lead", Text: text}},
			{ID: "01JD0000000000000000000000", Source: text, Subject: "w1", Time: time.Unix(1, 0), CorrelationID: text, Data: AgentQueued{From: "lead", Text: "t"}},
		} {
			got, err := e.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid(got) {
				t.Fatalf("%q: invalid JSON %s", text, got)
			}
			var a, b any
			if err := json.Unmarshal(got, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(v1Event(t, e), &b); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("%q: decodes to %v, encoding/json's to %v", text, a, b)
			}
		}
	}
}
