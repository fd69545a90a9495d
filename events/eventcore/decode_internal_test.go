package eventcore

import (
	"reflect"
	"testing"
	"time"
)

// encodedEvents is every event type, zero and filled, encoded as the log
// writes it, with the subject it is stored on.
func encodedEvents(t testing.TB) (raws [][]byte, subjects []string) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 123456789, time.UTC)
	for _, zero := range every {
		for i, text := range []string{"", "w-1", `"quoted" \ <b> ünï`} {
			p := reflect.New(reflect.TypeOf(zero))
			if i > 0 {
				fill(p, text, i*7, at)
			}
			e := Event{ID: "01JD0000000000000000000000", Source: "fleetd/h1", Subject: "w1", Time: at.Add(time.Duration(i)),
				Data: p.Elem().Interface().(Data)}
			if i == 1 {
				e.CorrelationID, e.CausationID = "01JD0000000000000000000001", "01JD0000000000000000000002"
			}
			raw, err := e.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			subj, err := e.StreamSubject()
			if err != nil {
				t.Fatal(err)
			}
			raws, subjects = append(raws, raw), append(subjects, subj)
		}
	}
	return raws, subjects
}

// sameDecode fails t unless Decode and the general decoding agree on raw:
// both refuse it with the same error, or both give the same event.
func sameDecode(t testing.TB, r *Registry, subject string, raw []byte) {
	t.Helper()
	got, gotErr := r.Decode(subject, raw)
	want, wantErr := r.decodeGeneral(subject, raw)
	if (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
		t.Fatalf("%s\nDecode: %v\ngeneral: %v", raw, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%s\nDecode:  %#v\ngeneral: %#v", raw, got, want)
	}
}

// Decode reads the envelope MarshalJSON writes directly (the point of
// it), and what it reads is what the general decoding reads.
func TestDecodeReadsTheLogsEnvelopeDirectly(t *testing.T) {
	r := NewRegistry()
	raws, subjects := encodedEvents(t)
	valid := 0
	for i, raw := range raws {
		sameDecode(t, r, subjects[i], raw)
		if _, err := r.decodeGeneral(subjects[i], raw); err != nil {
			continue // zero or filled data some types refuse
		}
		valid++
		env, ok := readEnvelope(raw)
		if !ok {
			t.Fatalf("not read directly: %s", raw)
		}
		if _, err := r.fromEnvelope(subjects[i], env); err != nil {
			t.Fatalf("read directly but refused: %v\n%s", err, raw)
		}
	}
	t.Logf("%d of %d encoded events valid", valid, len(raws))
	if valid < 2*len(every) {
		t.Fatalf("only %d of %d encoded events are valid", valid, len(raws))
	}
}

// Whatever a stored message holds, Decode says what the general decoding
// says: every byte of every event deleted, doubled, or replaced by one
// that matters to JSON.
func TestDecodeAgreesWithTheGeneralDecodingOnDamagedEnvelopes(t *testing.T) {
	r := NewRegistry()
	raws, subjects := encodedEvents(t)
	subs := []byte{'"', '\\', '}', '{', ',', ':', ' ', 'x', 'A', '0', 0, 0x7f, 0xff}
	for i, raw := range raws {
		for at := range raw {
			del := append(append([]byte{}, raw[:at]...), raw[at+1:]...)
			sameDecode(t, r, subjects[i], del)
			dup := append(append([]byte{}, raw[:at+1]...), raw[at:]...)
			sameDecode(t, r, subjects[i], dup)
			for _, c := range subs {
				if raw[at] == c {
					continue
				}
				mut := append([]byte{}, raw...)
				mut[at] = c
				sameDecode(t, r, subjects[i], mut)
			}
		}
		sameDecode(t, r, "", raw)
		sameDecode(t, r, subjects[(i+1)%len(subjects)], raw)
	}
}

func FuzzDecode(f *testing.F) {
	raws, subjects := encodedEvents(f)
	for i, raw := range raws {
		f.Add(subjects[i], raw)
	}
	r := NewRegistry()
	f.Fuzz(func(t *testing.T, subject string, raw []byte) {
		sameDecode(t, r, subject, raw)
	})
}
