package leadshim

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fleetd/fleetd/events"
)

func sortBy[T any](xs []T, key func(T) string) {
	slices.SortFunc(xs, func(a, b T) int { return cmp.Compare(key(a), key(b)) })
}

// maxSubjectFilters bounds the ?subject= filters of one event stream.
const maxSubjectFilters = 16

// streamEvents serves the log as server-sent events: from now, from
// ?since=<seq> (inclusive; 0 = the beginning) or after Last-Event-ID. Each
// event's id is its stream sequence, its event name its type, its data the
// CloudEvents JSON. ?subject= (repeatable) filters, e.g. fleet.agent.w-1.>.
//
// At most MaxEventReaders streams run at once (429 beyond). Each reads the
// log through its own ordered consumer that pulls at most EventBuffer
// messages ahead of what the reader has taken, so a slow reader slows only
// its own consumer — it never makes fleetd buffer for it, nor floods
// fleetd's NATS connection — and a reader that takes longer than
// EventWriteTimeout to accept one write is dropped.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) {
	q, aerr := s.eventQuery(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	if !s.admitReader() {
		writeError(w, fail(http.StatusTooManyRequests, "too_many_readers", "%d event streams are open, the most this shim serves; try again later", s.cfg.MaxEventReaders))
		return
	}
	defer s.readers.Add(-1)
	if aerr := s.clampStart(r.Context(), &q); aerr != nil {
		writeError(w, aerr)
		return
	}
	f, err := s.cfg.Log.Follow(r.Context(), q)
	if err != nil {
		writeError(w, fail(http.StatusServiceUnavailable, "nats_unavailable", "follow the log: %v", err))
		return
	}
	defer f.Stop()
	s.track(f, true)
	defer s.track(f, false)

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	rc := http.NewResponseController(w)
	// send writes one frame within EventWriteTimeout, or drops the reader.
	send := func(frame string) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(s.cfg.EventWriteTimeout))
		_, err := fmt.Fprint(w, frame)
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
				s.readersDropped.Add(1) // too slow; not merely gone
			}
			return false
		}
		_ = rc.SetWriteDeadline(time.Time{})
		return true
	}
	w.WriteHeader(http.StatusOK)
	if !send(": fleetd events\n\n") {
		return
	}
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	for {
		var frame string
		select {
		case <-r.Context().Done():
			return
		case <-ping.C:
			frame = ": ping\n\n"
		case ev, ok := <-f.Events():
			if !ok {
				return
			}
			data, err := json.Marshal(ev)
			if err != nil {
				continue
			}
			frame = fmt.Sprintf("id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Type(), data)
		}
		if !send(frame) {
			return
		}
	}
}

// admitReader takes an event stream slot, or counts a refusal.
func (s *Server) admitReader() bool {
	if n := s.readers.Add(1); n > int64(s.cfg.MaxEventReaders) {
		s.readers.Add(-1)
		s.readersRefused.Add(1)
		return false
	}
	return true
}

// track adds or removes a stream's follower from the shim's accounting.
func (s *Server) track(f *events.Follower, on bool) {
	s.fmu.Lock()
	defer s.fmu.Unlock()
	if on {
		s.followers[f] = struct{}{}
	} else {
		delete(s.followers, f)
	}
}

// eventQuery reads a stream request's filters and starting point, strictly:
// a bad subject filter, a since or Last-Event-ID that is not a stream
// sequence, is 400 before anything touches NATS.
func (s *Server) eventQuery(r *http.Request) (events.Query, *apiError) {
	// A reader holds at most EventBuffer messages pulled ahead (and, with
	// an NC, pulls of at most max_payload bytes: large events come a few
	// at a time) and two decoded events.
	q := events.Query{New: true, Prefetch: s.cfg.EventBuffer, Buffer: 1}
	if s.cfg.NC != nil {
		// The server counts a delivery's subject and ack reply too: a
		// margin, so that a message of max_payload still fits one pull.
		q.PrefetchBytes = int(s.cfg.NC.MaxPayload()) + 64<<10
	}
	subjects := r.URL.Query()["subject"]
	if len(subjects) > maxSubjectFilters {
		return q, fail(http.StatusBadRequest, "bad_subject", "%d subject filters; at most %d", len(subjects), maxSubjectFilters)
	}
	for i, subj := range subjects {
		if err := events.ValidFilter(subj); err != nil {
			return q, fail(http.StatusBadRequest, "bad_subject", "subject %q: %v", subj, err)
		}
		for _, other := range subjects[:i] {
			if overlap(subj, other) {
				return q, fail(http.StatusBadRequest, "bad_subject", "subjects %q and %q overlap; give one filter for both", other, subj)
			}
		}
		q.Subjects = append(q.Subjects, subj)
	}
	var start uint64 // the first sequence wanted (with New false)
	if v := r.URL.Query().Get("since"); v != "" {
		seq, err := parseSeq(strings.TrimPrefix(v, "#"))
		if err != nil {
			return q, fail(http.StatusBadRequest, "bad_since", "since %q: want a stream sequence: %v", v, err)
		}
		q.New, start = false, seq // inclusive; 0 is the beginning
	}
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		seq, err := parseSeq(v)
		if err != nil {
			return q, fail(http.StatusBadRequest, "bad_last_event_id", "Last-Event-ID %q: want a stream sequence: %v", v, err)
		}
		if seq == ^uint64(0) {
			// Nothing follows the last possible sequence: from now.
			q.New, start = true, 0
		} else {
			q.New, start = false, seq+1
		}
	}
	q.FromSeq = start
	return q, nil
}

// clampStart makes a start past the log's end (a client of a log that was
// reset, a made-up id) mean from now: waiting for a sequence the log may
// never reach would show nothing.
func (s *Server) clampStart(ctx context.Context, q *events.Query) *apiError {
	if q.New || q.FromSeq <= 1 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	last, err := s.cfg.Log.LastSeq(ctx, events.SubjectAll)
	if err != nil {
		return fail(http.StatusServiceUnavailable, "nats_unavailable", "read the log's end: %v", err)
	}
	if q.FromSeq > last+1 {
		q.New, q.FromSeq = true, 0
	}
	return nil
}

// parseSeq reads a stream sequence: decimal digits only, within uint64.
func parseSeq(v string) (uint64, error) {
	if v == "" || strings.TrimLeft(v, "0123456789") != "" {
		return 0, errors.New("not a decimal number")
	}
	seq, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, errors.New("out of range")
	}
	return seq, nil
}

// overlap reports whether some subject matches both filters (JetStream
// refuses a consumer whose filters overlap).
func overlap(a, b string) bool {
	at, bt := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; ; i++ {
		switch {
		case i == len(at) || i == len(bt):
			return len(at) == len(bt)
		case at[i] == ">" || bt[i] == ">":
			return true
		case at[i] != bt[i] && at[i] != "*" && bt[i] != "*":
			return false
		}
	}
}
