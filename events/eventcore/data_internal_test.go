package eventcore

import (
	"bytes"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
	"unsafe"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// readDataTypes are the types readData reads.
var readDataTypes = []Data{AgentQueued{}, AgentTyped{}, AgentSubmitted{}, AgentReplied{}}

// encodedData is data of the types readData reads, encoded as
// Event.MarshalJSON encodes it: every field alone, all of them, and
// random sets of them, with plain and hard strings and numbers.
func encodedData(t testing.TB) (types []Type, raws [][]byte) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC)
	add := func(d Data) {
		raw, err := jsonv2.Marshal(d, jsonv1.DefaultOptionsV1(), jsontext.EscapeForHTML(false))
		if err != nil {
			t.Fatal(err)
		}
		types, raws = append(types, d.EventType()), append(raws, raw)
	}
	r := rand.New(rand.NewPCG(3, 4))
	texts := []string{"", "w-1", "task 7: summarise the module", `"quoted" \ <b> ünï`, "a\nb", "0"}
	for _, zero := range readDataTypes {
		ty := reflect.TypeOf(zero)
		add(zero)
		for i, s := range texts {
			p := reflect.New(ty)
			fill(p, s, i*7+1, at)
			add(p.Elem().Interface().(Data))
			for f := range ty.NumField() {
				one := reflect.New(ty)
				one.Elem().Field(f).Set(p.Elem().Field(f))
				add(one.Elem().Interface().(Data))
			}
		}
		for i := range 300 {
			p := reflect.New(ty)
			full := reflect.New(ty)
			fill(full, texts[r.IntN(3)], r.IntN(1000)-10*(i%2), at)
			for f := range ty.NumField() {
				if r.IntN(2) == 0 {
					p.Elem().Field(f).Set(full.Elem().Field(f))
				}
			}
			add(p.Elem().Interface().(Data))
		}
	}
	return types, raws
}

// sameData fails t unless readData, when it reads raw, reads what the
// general decoder does.
func sameData(t testing.TB, r *Registry, typ Type, raw []byte) bool {
	t.Helper()
	got, ok := readData(typ, raw)
	if !ok {
		return false
	}
	want, err := r.decoders[typ](raw)
	if err != nil {
		t.Fatalf("%s: read directly, but the general decoder refuses it: %v", raw, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s\nreadData: %#v\ngeneral:  %#v", raw, got, want)
	}
	return true
}

// readData reads the data the log's writer writes as the general decoder
// does, and reads directly every such data of plain strings and fields it
// knows.
func TestReadDataReadsWhatTheWriterWrites(t *testing.T) {
	r := NewRegistry()
	types, raws := encodedData(t)
	direct := 0
	for i, raw := range raws {
		if sameData(t, r, types[i], raw) {
			direct++
		}
	}
	t.Logf("%d of %d read directly", direct, len(raws))
	if direct < len(raws)/3 {
		t.Fatalf("only %d of %d read directly", direct, len(raws))
	}
	// The turn events a bench or a fleet appends are read directly.
	for _, d := range []Data{
		AgentQueued{From: "lead", Text: "task 1: summarise the module"},
		AgentTyped{Pane: "p", Method: "agent.prompt", Bytes: 28},
		AgentSubmitted{Via: "hook", PromptID: "prompt-1", SessionID: "s-a-0001", Prompt: "task 1: summarise the module"},
		AgentReplied{Reply: "SIM: task 1", PromptID: "prompt-1", SessionID: "s-a-0001", Model: "claude-sim",
			Tokens: Tokens{In: 40, Out: 40}, CostUSD: 0.0007},
	} {
		raw, err := jsonv2.Marshal(d, jsonv1.DefaultOptionsV1(), jsontext.EscapeForHTML(false))
		if err != nil {
			t.Fatal(err)
		}
		if !sameData(t, r, d.EventType(), raw) {
			t.Fatalf("not read directly: %s", raw)
		}
	}
}

// Whatever the data holds, readData reads nothing the general decoder
// reads otherwise or refuses: every byte deleted, doubled, or replaced by
// one that matters to JSON, and each data read as every other type.
func TestReadDataAgreesOnDamagedData(t *testing.T) {
	r := NewRegistry()
	types, raws := encodedData(t)
	subs := []byte{'"', '\\', '}', '{', ',', ':', ' ', 'x', 'A', '0', '1', '9', '-', '.', 'e', 0, 0x7f, 0xff}
	for i, raw := range raws {
		if i%7 != 0 && testing.Short() {
			continue
		}
		for at := range raw {
			sameData(t, r, types[i], append(append([]byte{}, raw[:at]...), raw[at+1:]...))
			sameData(t, r, types[i], append(append([]byte{}, raw[:at+1]...), raw[at:]...))
			for _, c := range subs {
				if raw[at] != c {
					mut := append([]byte{}, raw...)
					mut[at] = c
					sameData(t, r, types[i], mut)
				}
			}
		}
		for _, d := range readDataTypes {
			sameData(t, r, d.EventType(), raw)
		}
	}
	for _, raw := range []string{
		`{"text":"a","text":"b"}`, `{"text":"a","from":"b"}`, `{"Text":"a"}`, `{"text":"a"} `, `{"text":"a",}`,
		`{"pane":"p","method":"m","bytes":1e2}`, `{"pane":"p","method":"m","bytes":01}`, `{"pane":"p","method":"m","bytes":-0}`,
		`{"pane":"p","method":"m","bytes":99999999999999999999}`, `{"pane":"p","method":"m","state_change_seq":-1,"bytes":1}`,
		`{"pane":"p","method":"m","bytes":1,"clear":false}`, `{"pane":"p","method":"m","bytes":1,"clear":null}`,
		`{"via":"hook","prompt":null}`, `{"via":""}`, `{"via":"h","prompt_id":"x"}`,
		`{"reply":"r","tokens":{"in":1,"out":2},"cost_usd":1e400}`, `{"reply":"r","tokens":{"in":1,"out":2},"cost_usd":-1.5E-3}`,
		`{"reply":"r","tokens":{"out":2,"in":1}}`, `{"reply":"r","tokens":{"in":1,"out":2,"cache_read":0}}`,
		`{"reply":"r","tokens":{"in":1,"out":2},"worktree":{"repo":"x"}}`, `{"reply":"r","tokens":{"in":1,"out":2}}`,
	} {
		for _, d := range readDataTypes {
			sameData(t, r, d.EventType(), []byte(raw))
		}
	}
}

func FuzzReadData(f *testing.F) {
	types, raws := encodedData(f)
	for i, raw := range raws {
		f.Add(string(types[i]), raw)
	}
	r := NewRegistry()
	f.Fuzz(func(t *testing.T, typ string, raw []byte) {
		if _, known := r.decoders[Type(typ)]; known {
			sameData(t, r, Type(typ), raw)
		}
	})
}

// A string read directly is a copy of its own, not a window on the data
// or on one copy of it: a row keeps a field for long (a session its
// model), and the reply beside it in the data would stay with it.
func TestReadDataCopiesItsStrings(t *testing.T) {
	raw := []byte(`{"reply":"a long reply","prompt_id":"p1","session_id":"s1","model":"m1","tokens":{"in":1,"out":2}}`)
	d, ok := readData(TypeAgentReplied, raw)
	if !ok {
		t.Fatal("not read directly")
	}
	r := d.(AgentReplied)
	fields := []string{r.Reply, r.PromptID, r.SessionID, r.Model}
	for i, a := range fields {
		pa := uintptr(unsafe.Pointer(unsafe.StringData(a)))
		if lo := uintptr(unsafe.Pointer(&raw[0])); pa >= lo && pa < lo+uintptr(len(raw)) {
			t.Fatalf("%q is a window on the data", a)
		}
		for _, b := range fields[i+1:] {
			// Two windows on one copy of the data stand as far apart as
			// the fields do in it.
			pb := uintptr(unsafe.Pointer(unsafe.StringData(b)))
			if pb-pa == uintptr(bytes.Index(raw, []byte(`"`+b+`"`))-bytes.Index(raw, []byte(`"`+a+`"`))) {
				t.Fatalf("%q and %q are windows on one copy of the data", a, b)
			}
		}
	}
}
