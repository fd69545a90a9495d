package eventcore

import (
	"strconv"
)

// readData reads the data of the events every turn appends (queued,
// typed, submitted, replied: most of a log) laid out exactly as
// Event.MarshalJSON writes it — the fields in the struct's order, an
// omitted one absent, strings of printable ASCII without escapes, numbers
// plain — without reflection; false for any other type or spelling, and
// for any field it does not read (a context, a deadline, a worktree …),
// which then take the general way (decodeData's decoder), whose result
// and error are the word. A rebuild decodes every event of the log, and
// the general decoder was a sixteenth of its CPU.
func readData(t Type, raw []byte) (Data, bool) {
	r := dataReader{s: raw, first: true}
	if !r.lit("{") {
		return nil, false
	}
	var d Data
	switch t {
	case TypeAgentQueued:
		var v AgentQueued
		ok := r.str("from", &v.From, true) && r.str("text", &v.Text, false) && r.str("command", &v.Command, true) &&
			r.str("slice_ref", &v.SliceRef, true) && r.str("assigned_from", &v.AssignedFrom, true) &&
			r.str("job", &v.Job, true) && r.str("task", &v.Task, true) && r.bool("notify", &v.Notify) &&
			r.str("kind", &v.Kind, true)
		if !ok {
			return nil, false
		}
		d = v
	case TypeAgentTyped:
		var v AgentTyped
		ok := r.str("pane", &v.Pane, false) && r.str("method", &v.Method, false) &&
			r.uint("state_change_seq", &v.StateChangeSeq, true) && r.int("bytes", &v.Bytes, false) &&
			r.int("enter", &v.Enter, true) && r.str("delivery", &v.Delivery, true) && r.int("pieces", &v.Pieces, true) &&
			r.str("file", &v.File, true) && r.str("prompt", &v.Prompt, true) && r.bool("clear", &v.Clear)
		if !ok {
			return nil, false
		}
		d = v
	case TypeAgentSubmitted:
		var v AgentSubmitted
		ok := r.str("prompt_id", &v.PromptID, true) && r.str("session_id", &v.SessionID, true) &&
			r.str("via", &v.Via, false) && r.uint("state_change_seq", &v.StateChangeSeq, true) &&
			r.str("prompt", &v.Prompt, true)
		if !ok {
			return nil, false
		}
		d = v
	case TypeAgentReplied:
		var v AgentReplied
		ok := r.str("reply", &v.Reply, false) && r.str("prompt_id", &v.PromptID, true) &&
			r.str("session_id", &v.SessionID, true) && r.str("model", &v.Model, true) &&
			r.key("tokens") && r.lit("{") && r.restart() &&
			r.int64("in", &v.Tokens.In, false) && r.int64("out", &v.Tokens.Out, false) &&
			r.int64("cache_read", &v.Tokens.CacheRead, true) && r.int64("cache_creation", &v.Tokens.CacheCreation, true) &&
			r.lit("}") && r.float("cost_usd", &v.CostUSD) && r.bool("usage_pending", &v.UsagePending) &&
			r.str("transcript", &v.Transcript, true)
		if !ok {
			return nil, false
		}
		d = v
	default:
		return nil, false
	}
	if !r.lit("}") || r.pos != len(r.s) {
		return nil, false
	}
	return d, true
}

// dataReader consumes an event's data from the front of s: pos is how
// far it has read; first says no field of the current object is read
// yet (the next has no comma before it). Each string it reads is a copy
// of its own, as the general decoder's are: a row keeps a field for long
// (a session its model, an agent its session id), and a field sharing
// its event's data would keep the reply beside it, up to a MiB.
type dataReader struct {
	s     []byte
	pos   int
	first bool
}

func (r *dataReader) lit(lit string) bool {
	if len(r.s)-r.pos < len(lit) || string(r.s[r.pos:r.pos+len(lit)]) != lit {
		return false
	}
	r.pos += len(lit)
	return true
}

// restart begins a nested object's fields.
func (r *dataReader) restart() bool {
	r.first = true
	return true
}

// key reads the field name's key (its comma, its quoted name, the
// colon) if it comes next.
func (r *dataReader) key(name string) bool {
	at := r.pos
	if !r.first && !r.lit(",") || !r.lit(`"`) || !r.lit(name) || !r.lit(`":`) {
		r.pos = at
		return false
	}
	r.first = false
	return true
}

// field reads a field's key when it comes next: present says so; ok is
// false when a required field is absent.
func (r *dataReader) field(name string, optional bool) (present, ok bool) {
	if r.key(name) {
		return true, true
	}
	return false, optional
}

func (r *dataReader) str(name string, v *string, optional bool) bool {
	present, ok := r.field(name, optional)
	if !present {
		return ok
	}
	if r.pos >= len(r.s) || r.s[r.pos] != '"' {
		return false
	}
	lo := r.pos + 1
	for i := lo; i < len(r.s); i++ {
		switch c := r.s[i]; {
		case c == '"':
			*v = string(r.s[lo:i])
			r.pos = i + 1
			// An omitted field is never written empty.
			return !optional || i > lo
		case c < 0x20 || c >= 0x7f || c == '\\':
			return false
		}
	}
	return false
}

// number reads a JSON number's text: an integer, or with frac a decimal
// fraction and exponent too.
func (r *dataReader) number(frac bool) ([]byte, bool) {
	s, i := r.s, r.pos
	digits := func() bool {
		at := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i > at
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case !digits():
		return nil, false
	}
	if frac {
		if i < len(s) && s[i] == '.' {
			i++
			if !digits() {
				return nil, false
			}
		}
		if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
			i++
			if i < len(s) && (s[i] == '+' || s[i] == '-') {
				i++
			}
			if !digits() {
				return nil, false
			}
		}
	}
	n := s[r.pos:i]
	r.pos = i
	return n, true
}

func (r *dataReader) int64(name string, v *int64, optional bool) bool {
	present, ok := r.field(name, optional)
	if !present {
		return ok
	}
	n, ok := r.number(false)
	if !ok {
		return false
	}
	x, err := strconv.ParseInt(string(n), 10, 64)
	*v = x
	return err == nil && (!optional || x != 0)
}

func (r *dataReader) int(name string, v *int, optional bool) bool {
	var x int64
	if !r.int64(name, &x, optional) || int64(int(x)) != x {
		return false
	}
	*v = int(x)
	return true
}

// uint reads an optional unsigned field.
func (r *dataReader) uint(name string, v *uint64, optional bool) bool {
	present, ok := r.field(name, optional)
	if !present {
		return ok
	}
	n, ok := r.number(false)
	if !ok || n[0] == '-' {
		return false
	}
	x, err := strconv.ParseUint(string(n), 10, 64)
	*v = x
	return err == nil && (!optional || x != 0)
}

// float reads an optional float field.
func (r *dataReader) float(name string, v *float64) bool {
	present, _ := r.field(name, true)
	if !present {
		return true
	}
	n, ok := r.number(true)
	if !ok {
		return false
	}
	x, err := strconv.ParseFloat(string(n), 64)
	*v = x
	return err == nil && x != 0
}

// bool reads an optional flag, written only when true.
func (r *dataReader) bool(name string, v *bool) bool {
	present, _ := r.field(name, true)
	if !present {
		return true
	}
	*v = true
	return r.lit("true")
}
