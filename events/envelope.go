package events

import (
	"bytes"
	"encoding/json"
	"fmt"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
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
	var env envelope
	if err := jsonv2.Unmarshal(raw, &env, jsonv1.DefaultOptionsV1()); err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
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
		want, err := ev.StreamSubject()
		if err != nil {
			return Event{}, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
		if want != subject {
			return Event{}, fmt.Errorf("%w: %s event for %q stored on %s", ErrMalformed, env.Type, env.Subject, subject)
		}
	}
	return ev, nil
}
