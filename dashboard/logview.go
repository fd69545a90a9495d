package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/fleetd/fleetd/events"
)

// logModel is the log view: the newest events matching Subject, newest
// first.
type logModel struct {
	Subject string
	Rows    []logRow
	Cap     int
	// Scanned is how far back the first page looked (from #From).
	From uint64
}

// logRow is one event as the log view shows it: a line, and its
// CloudEvents JSON behind a click.
type logRow struct {
	Seq      uint64
	Line     string
	Kind     string
	JSON     string
	Clipped  bool
	Category string
}

func (s *Server) logRow(ev events.Event) logRow {
	b, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		b = fmt.Appendf(nil, "(cannot encode: %v)", err)
	}
	r := logRow{Seq: ev.Seq, Line: events.Describe(ev), Kind: ev.Type().Kind(), Category: string(ev.Type().Category())}
	if len(b) > s.cfg.MaxText {
		b, r.Clipped = b[:s.cfg.MaxText], true
	}
	r.JSON = string(b)
	return r
}

// logPage reads the newest LogRows events matching subject among the
// last LogScan of the log up to the view's point, and the sequence a live
// stream goes on from.
func (s *Server) logPage(ctx context.Context, src source, subject string) (logModel, uint64, error) {
	m := logModel{Subject: subject, Cap: s.cfg.LogRows}
	end, ok := src.readTo()
	if !ok {
		return m, 0, nil
	}
	if end == 0 {
		last, err := s.cfg.Log.LastSeq(ctx, events.SubjectAll)
		if err != nil {
			return m, 0, err
		}
		end = last
	}
	if end == 0 {
		return m, 0, nil
	}
	from := uint64(1)
	if end > uint64(s.cfg.LogScan) {
		from = end - uint64(s.cfg.LogScan) + 1
	}
	m.From = from
	var evs []events.Event
	for ev, err := range s.cfg.Log.Read(ctx, events.Query{Subjects: []string{subject}, FromSeq: from, ToSeq: end}) {
		if err != nil {
			return m, 0, fmt.Errorf("read the log: %w", err)
		}
		evs = append(evs, ev)
		if len(evs) > 2*s.cfg.LogRows {
			evs = slices.Delete(evs, 0, s.cfg.LogRows)
		}
	}
	if n := len(evs); n > s.cfg.LogRows {
		evs = evs[n-s.cfg.LogRows:]
	}
	for i := len(evs) - 1; i >= 0; i-- {
		m.Rows = append(m.Rows, s.logRow(evs[i]))
	}
	return m, end, nil
}
