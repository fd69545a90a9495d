package projections

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
)

// encodeTurn encodes a turn for the turns bucket, byte for byte as encode
// does. A rebuild writes every turn of the log, and encode's reflection
// was a twentieth of its CPU (4 µs a turn); written out field by field it
// is a fraction of that. A string that needs escaping goes through
// encode on its own; a turn with a time or a cost that plain notation
// does not take (a year past 9999, a NaN) is encoded by encode whole, so
// its bytes and its errors are encode's. TestEncodeTurn holds the two
// equal, for every field Turn has.
func encodeTurn(t *lifecycle.Turn) ([]byte, error) {
	size := 768 + len(t.Text) + len(t.Reply) + len(t.Prompt) + len(t.Command) + len(t.Message)
	w := turnWriter{}
	b := w.turn(make([]byte, 0, size), t)
	if w.err != nil {
		return nil, w.err
	}
	if w.whole {
		return encode(*t)
	}
	return b, nil
}

// turnWriter appends a turn's JSON to the slice each method takes and
// returns. whole says the turn must be encoded by encode after all; err
// is a string encode refused.
type turnWriter struct {
	whole bool
	err   error
}

func (w *turnWriter) turn(b []byte, t *lifecycle.Turn) []byte {
	// "id" is always written, and first: every other field starts with
	// its comma.
	b = append(b, `{"id":`...)
	b = w.quote(b, t.ID)
	b = w.str(b, `,"agent":`, t.Agent, true)
	b = w.str(b, `,"role":`, t.Role, true)
	b = w.str(b, `,"from":`, t.From, true)
	b = w.str(b, `,"text":`, t.Text, false)
	b = w.str(b, `,"command":`, t.Command, true)
	if n := t.Normalized; n != (events.Normalization{}) {
		b = append(b, `,"normalized":{`...)
		mark := len(b)
		b = appendInt(b, `,"control_sequences":`, int64(n.ControlSequences), true)
		b = appendInt(b, `,"carriage_returns":`, int64(n.CarriageReturns), true)
		b = appendInt(b, `,"removed_bytes":`, int64(n.RemovedBytes), true)
		b = append(b[:mark], b[mark+1:]...) // the first field's comma
		b = append(b, '}')
	}
	b = w.strs(b, `,"context":[`, t.Context)
	b = w.str(b, `,"slice_ref":`, t.SliceRef, true)
	b = w.time(b, `,"deadline":"`, t.Deadline)
	b = w.str(b, `,"job":`, t.Job, true)
	b = w.str(b, `,"task":`, t.Task, true)
	b = appendBool(b, `,"notify":true`, t.Notify)
	b = appendBool(b, `,"nudge":true`, t.Nudge)
	b = w.str(b, `,"state":`, string(t.State), false)
	b = w.time(b, `,"queued_at":"`, t.QueuedAt)
	b = w.time(b, `,"assigned_at":"`, t.AssignedAt)
	b = w.time(b, `,"typed_at":"`, t.TypedAt)
	b = w.time(b, `,"submitted_at":"`, t.SubmittedAt)
	b = w.time(b, `,"replied_at":"`, t.RepliedAt)
	b = w.time(b, `,"failed_at":"`, t.FailedAt)
	b = w.str(b, `,"pane":`, t.Pane, true)
	b = w.str(b, `,"method":`, t.Method, true)
	b = appendUint(b, `,"state_change_seq":`, t.StateChangeSeq)
	b = appendInt(b, `,"enter":`, int64(t.Enter), true)
	b = w.str(b, `,"submitted_via":`, t.SubmittedVia, true)
	b = w.str(b, `,"delivery":`, t.Delivery, true)
	b = appendInt(b, `,"pieces":`, int64(t.Pieces), true)
	b = w.str(b, `,"file":`, t.File, true)
	b = w.str(b, `,"prompt":`, t.Prompt, true)
	b = appendBool(b, `,"clear":true`, t.Clear)
	b = appendInt(b, `,"deferrals":`, int64(t.Deferrals), true)
	b = appendInt(b, `,"releases":`, int64(t.Releases), true)
	b = w.str(b, `,"released_from":`, t.ReleasedFrom, true)
	b = w.time(b, `,"released_at":"`, t.ReleasedAt)
	b = appendInt(b, `,"requeued":`, int64(t.Requeued), true)
	b = appendInt(b, `,"stray_replies":`, int64(t.StrayReplies), true)
	b = w.str(b, `,"prompt_id":`, t.PromptID, true)
	b = w.str(b, `,"session_id":`, t.SessionID, true)
	b = w.str(b, `,"model":`, t.Model, true)
	b = w.str(b, `,"reply":`, t.Reply, true)
	b = appendInt(b, `,"tokens":{"in":`, t.Tokens.In, false)
	b = appendInt(b, `,"out":`, t.Tokens.Out, false)
	b = appendInt(b, `,"cache_read":`, t.Tokens.CacheRead, true)
	b = appendInt(b, `,"cache_creation":`, t.Tokens.CacheCreation, true)
	b = append(b, '}')
	b = w.float(b, `,"cost_usd":`, t.CostUSD)
	b = appendBool(b, `,"usage_pending":true`, t.UsagePending)
	b = w.strs(b, `,"other_prompts":[`, t.OtherPrompts)
	b = w.str(b, `,"reason":`, t.Reason, true)
	b = w.str(b, `,"message":`, t.Message, true)
	b = appendUint(b, `,"queue_seq":`, t.QueueSeq)
	b = appendUint(b, `,"last_seq":`, t.LastSeq)
	b = appendUint(b, `,"first_seq":`, t.FirstSeq)
	return append(b, '}')
}

// str appends a string field; key is its comma, name and colon.
func (w *turnWriter) str(b []byte, key, s string, omitEmpty bool) []byte {
	if omitEmpty && s == "" {
		return b
	}
	return w.quote(append(b, key...), s)
}

// quote appends s as a JSON string. Printable ASCII is written as it is;
// anything else (escapes, the HTML characters encode escapes, non-ASCII
// to check and maybe replace) goes through encode.
func (w *turnWriter) quote(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, err := encode(s)
			if err != nil && w.err == nil {
				w.err = err
			}
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// strs appends a list of strings, unless empty; key ends with its '['.
func (w *turnWriter) strs(b []byte, key string, ss []string) []byte {
	if len(ss) == 0 {
		return b
	}
	b = append(b, key...)
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = w.quote(b, s)
	}
	return append(b, ']')
}

func appendInt(b []byte, key string, n int64, omitEmpty bool) []byte {
	if omitEmpty && n == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), n, 10)
}

func appendUint(b []byte, key string, n uint64) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendUint(append(b, key...), n, 10)
}

// appendBool appends field (its comma, name, colon and true) when v.
func appendBool(b []byte, field string, v bool) []byte {
	if !v {
		return b
	}
	return append(b, field...)
}

// float appends a non-zero cost in plain notation, as encode writes
// 1e-6 ≤ |f| < 1e21; any other leaves the turn to encode.
func (w *turnWriter) float(b []byte, key string, f float64) []byte {
	if f == 0 {
		return b
	}
	if a := math.Abs(f); !(a >= 1e-6 && a < 1e21) {
		w.whole = true
		return b
	}
	return strconv.AppendFloat(append(b, key...), f, 'f', -1, 64)
}

// time appends a non-zero time in RFC 3339 with nanoseconds, as
// time.Time's MarshalJSON writes it; a year or an offset it refuses
// leaves the turn to encode. key ends with the value's opening quote.
func (w *turnWriter) time(b []byte, key string, t time.Time) []byte {
	if t.IsZero() {
		return b
	}
	_, off := t.Zone()
	if y := t.Year(); y < 0 || y > 9999 || off <= -24*3600 || off >= 24*3600 {
		w.whole = true
		return b
	}
	b = t.AppendFormat(append(b, key...), time.RFC3339Nano)
	return append(b, '"')
}
