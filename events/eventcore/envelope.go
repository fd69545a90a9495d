package eventcore

import (
	"bytes"
	"encoding/json"
	"fmt"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// SpecVersion is the CloudEvents version of every fleet event.
const SpecVersion = "1.0"

// Event is one fact in the log: a CloudEvents 1.0 envelope around typed data.
// Subject is the aggregate id (the agent, role, host or job token); the NATS
// subject is derived from it and the data's type.
type Event struct {
	ID            string
	Source        string
	Subject       string
	Time          time.Time
	CorrelationID string
	CausationID   string
	Data          Data

	// Seq and NATSSubject are the event's place in the stream; set on
	// events read from the log, zero on events about to be appended.
	Seq         uint64
	NATSSubject string
}

// Skipped reports whether e is a placeholder for a message that was not a
// valid event (Query.Skips): it has a Seq and a NATSSubject but no Data.
func (e Event) Skipped() bool { return e.Data == nil && e.Seq != 0 }

// Type is the event's type, taken from its data.
func (e Event) Type() Type {
	if e.Data == nil {
		return ""
	}
	return e.Data.EventType()
}

// StreamSubject is the NATS subject the event is stored on.
func (e Event) StreamSubject() (string, error) {
	t := e.Type()
	if t == "" {
		return "", fmt.Errorf("%w: event has no data", ErrMalformed)
	}
	return Subject(t.Category(), e.Subject, t.Kind())
}

// envelope is the wire form (CloudEvents structured mode).
type envelope struct {
	SpecVersion     string          `json:"specversion"`
	ID              string          `json:"id"`
	Type            Type            `json:"type"`
	Source          string          `json:"source"`
	Subject         string          `json:"subject"`
	Time            time.Time       `json:"time"`
	DataContentType string          `json:"datacontenttype"`
	CorrelationID   string          `json:"correlationid,omitempty"`
	CausationID     string          `json:"causationid,omitempty"`
	Data            json.RawMessage `json:"data"`
}

// MarshalJSON writes the CloudEvents envelope. Text is not HTML-escaped
// ("<" stays one byte, not six): a turn's text is code and prose, and a
// 1 MiB text must still fit a NATS message.
//
// Every append encodes an event, so this is on the path of every turn
// and every bulk write: the data is encoded by the v2 encoder with v1's
// semantics (the same JSON as encoding/json, in about half the time), and
// the envelope around it is written directly — its fields are strings
// and a time, and the data is already valid JSON (encoding/json would
// scan and compact it again). A string that is not valid UTF-8 takes
// encoding/json's way, which replaces the bad bytes.
func (e Event) MarshalJSON() ([]byte, error) {
	data, err := jsonv2.Marshal(e.Data, jsonv1.DefaultOptionsV1(), jsontext.EscapeForHTML(false))
	if err != nil {
		return nil, fmt.Errorf("encode %s data: %w", e.Type(), err)
	}
	if b, ok := appendEnvelope(make([]byte, 0, len(data)+256), e, data); ok {
		return b, nil
	}
	return marshal(envelope{
		SpecVersion:     SpecVersion,
		ID:              e.ID,
		Type:            e.Type(),
		Source:          e.Source,
		Subject:         e.Subject,
		Time:            e.Time.UTC(),
		DataContentType: "application/json",
		CorrelationID:   e.CorrelationID,
		CausationID:     e.CausationID,
		Data:            data,
	})
}

// appendEnvelope appends the envelope of e around its encoded data, the
// fields in envelope's order; false when a string is not valid UTF-8 or
// the time is out of JSON's range (the caller then encodes the slow way,
// which mends or refuses them as encoding/json does).
func appendEnvelope(b []byte, e Event, data []byte) ([]byte, bool) {
	t := e.Time.UTC()
	if y := t.Year(); y < 0 || y > 9999 {
		return nil, false
	}
	ok := true
	field := func(name, v string, omitEmpty bool) {
		if !ok || (omitEmpty && v == "") {
			return
		}
		b = append(b, ',', '"')
		b = append(b, name...)
		b = append(b, '"', ':')
		var err error
		if b, err = jsontext.AppendQuote(b, v); err != nil {
			ok = false
		}
	}
	b = append(b, `{"specversion":"`+SpecVersion+`"`...)
	field("id", e.ID, false)
	field("type", string(e.Type()), false)
	field("source", e.Source, false)
	field("subject", e.Subject, false)
	b = append(b, `,"time":"`...)
	b = t.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","datacontenttype":"application/json"`...)
	field("correlationid", e.CorrelationID, true)
	field("causationid", e.CausationID, true)
	b = append(b, `,"data":`...)
	b = append(b, data...)
	b = append(b, '}')
	return b, ok
}

// marshal is json.Marshal without HTML escaping.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Decode parses and validates a message from the stream. subject is the
// NATS subject it was stored on; it must agree with the envelope's type and
// aggregate id, so a message cannot claim to be about another aggregate.
// A string field over the registry's Limits makes the message invalid
// (ErrMalformed and ErrTooLarge): it is never folded into a read model.
func (r *Registry) Decode(subject string, raw []byte) (Event, error) {
	// Every event read is decoded (a rebuild decodes the whole log), so
	// the envelope as Event.MarshalJSON writes it is read directly; any
	// other spelling of it, and any event the direct read does not take,
	// goes the general way, whose result and error are the word.
	if env, ok := readEnvelope(raw); ok {
		if ev, err := r.fromEnvelope(subject, env); err == nil {
			return ev, nil
		}
	}
	return r.decodeGeneral(subject, raw)
}

// decodeGeneral decodes any JSON spelling of an envelope, as
// encoding/json would.
func (r *Registry) decodeGeneral(subject string, raw []byte) (Event, error) {
	var env envelope
	if err := jsonv2.Unmarshal(raw, &env, jsonv1.DefaultOptionsV1()); err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return r.fromEnvelope(subject, env)
}

// fromEnvelope validates a parsed envelope and decodes its data.
func (r *Registry) fromEnvelope(subject string, env envelope) (Event, error) {
	if env.SpecVersion != SpecVersion {
		return Event{}, fmt.Errorf("%w: specversion %q", ErrMalformed, env.SpecVersion)
	}
	if _, err := ulid.ParseStrict(env.ID); err != nil {
		return Event{}, fmt.Errorf("%w: id %q is not a ULID", ErrMalformed, env.ID)
	}
	if env.Time.IsZero() {
		return Event{}, fmt.Errorf("%w: no time", ErrMalformed)
	}
	data, err := r.decodeData(env.Type, env.Data)
	if err != nil {
		return Event{}, err
	}
	ev := Event{
		ID: env.ID, Source: env.Source, Subject: env.Subject, Time: env.Time,
		CorrelationID: env.CorrelationID, CausationID: env.CausationID, Data: data,
		NATSSubject: subject,
	}
	if err := r.limits.check(ev); err != nil {
		return Event{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	if subject != "" {
		// StreamSubject's checks, without building the subject to compare.
		c, kind := env.Type.split()
		if err := validFor(c, ev.Subject); err != nil {
			return Event{}, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		if !isSubject(subject, c, ev.Subject, kind) {
			return Event{}, fmt.Errorf("%w: %s event for %q stored on %s", ErrMalformed, env.Type, env.Subject, subject)
		}
	}
	return ev, nil
}

// isSubject reports whether s is Subject(c, id, kind).
func isSubject(s string, c Category, id, kind string) bool {
	for _, part := range [...]string{"fleet.", string(c), ".", id, "."} {
		var ok bool
		if s, ok = strings.CutPrefix(s, part); !ok {
			return false
		}
	}
	return s == kind
}

// readEnvelope reads an envelope laid out exactly as appendEnvelope
// writes it, its strings plain ASCII (no escapes); false for anything
// else. The data is what stands between "data": and the closing brace;
// that it is one JSON value is left to its decoder, which refuses
// anything after it — and a refusal sends the event the general way.
func readEnvelope(raw []byte) (envelope, bool) {
	var r envReader
	r.b = raw
	ok := r.lit(`{"specversion":"`+SpecVersion+`","id":`) && r.str(envID) &&
		r.lit(`,"type":`) && r.str(envType) &&
		r.lit(`,"source":`) && r.str(envSource) &&
		r.lit(`,"subject":`) && r.str(envSubject) &&
		r.lit(`,"time":`) && r.time() &&
		r.lit(`,"datacontenttype":"application/json"`) &&
		(!r.has(`,"correlationid":`) || r.lit(`,"correlationid":`) && r.str(envCorrelation)) &&
		(!r.has(`,"causationid":`) || r.lit(`,"causationid":`) && r.str(envCausation)) &&
		r.lit(`,"data":`)
	if !ok || r.pos+2 > len(raw) || raw[len(raw)-1] != '}' {
		return envelope{}, false
	}
	// The envelope's strings share one copy of what precedes the data
	// (one allocation, not six; a string kept keeps those few hundred
	// bytes, not the message).
	head := string(raw[:r.pos])
	at := func(f int) string { return head[r.spans[f][0]:r.spans[f][1]] }
	return envelope{
		SpecVersion: SpecVersion, ID: at(envID), Type: Type(at(envType)), Source: at(envSource), Subject: at(envSubject),
		Time: r.at, DataContentType: "application/json", CorrelationID: at(envCorrelation), CausationID: at(envCausation),
		Data: raw[r.pos : len(raw)-1],
	}, true
}

// The envelope's string fields, as envReader notes where they stand.
const (
	envID = iota
	envType
	envSource
	envSubject
	envCorrelation
	envCausation
	envStrings
)

// envReader consumes an envelope from the front of b: pos is how far it
// has read, spans where each string field's text stands (an absent
// field's span is empty), at the time.
type envReader struct {
	b     []byte
	pos   int
	spans [envStrings][2]int
	at    time.Time
}

func (r *envReader) has(lit string) bool {
	return len(r.b)-r.pos >= len(lit) && string(r.b[r.pos:r.pos+len(lit)]) == lit
}

func (r *envReader) lit(lit string) bool {
	if !r.has(lit) {
		return false
	}
	r.pos += len(lit)
	return true
}

// str reads a quoted string of printable ASCII without escapes, the
// text of field f.
func (r *envReader) str(f int) bool {
	lo, hi, ok := r.quoted()
	r.spans[f] = [2]int{lo, hi}
	return ok
}

// time reads a quoted time as encoding/json would (time.Time's own
// UnmarshalJSON, strict RFC 3339).
func (r *envReader) time() bool {
	lo, hi, ok := r.quoted()
	return ok && r.at.UnmarshalJSON(r.b[lo-1:hi+1]) == nil
}

// quoted reads a quoted string of printable ASCII without escapes and
// returns where its text stands.
func (r *envReader) quoted() (lo, hi int, ok bool) {
	if r.pos >= len(r.b) || r.b[r.pos] != '"' {
		return 0, 0, false
	}
	lo = r.pos + 1
	end := bytes.IndexByte(r.b[lo:], '"')
	if end < 0 {
		return 0, 0, false
	}
	hi = lo + end
	for _, c := range r.b[lo:hi] {
		if c < 0x20 || c >= 0x7f || c == '\\' {
			return 0, 0, false
		}
	}
	r.pos = hi + 1
	return lo, hi, true
}
