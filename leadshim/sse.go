package leadshim

import (
	"cmp"
	"encoding/json"
	"fmt"
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

// streamEvents serves the log as server-sent events: from now, from
// ?since=<seq> (inclusive; 0 = the beginning) or after Last-Event-ID. Each
// event's id is its stream sequence, its event name its type, its data the
// CloudEvents JSON. ?subject= (repeatable) filters, e.g. fleet.agent.w-1.>.
func (s *Server) streamEvents(w http.ResponseWriter, r *http.Request) {
	q := events.Query{New: true}
	for _, subj := range r.URL.Query()["subject"] {
		if subj != "fleet.>" && !strings.HasPrefix(subj, "fleet.") {
			writeError(w, fail(http.StatusBadRequest, "bad_subject", "subject %q is not under fleet.>", subj))
			return
		}
		q.Subjects = append(q.Subjects, subj)
	}
	if v := r.URL.Query().Get("since"); v != "" {
		seq, err := strconv.ParseUint(strings.TrimPrefix(v, "#"), 10, 64)
		if err != nil {
			writeError(w, fail(http.StatusBadRequest, "bad_since", "since %q: want a stream sequence", v))
			return
		}
		q.New, q.FromSeq = false, seq
	}
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		seq, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			writeError(w, fail(http.StatusBadRequest, "bad_last_event_id", "Last-Event-ID %q: want a stream sequence", v))
			return
		}
		q.New, q.FromSeq = false, seq+1
	}
	rc := http.NewResponseController(w)
	f, err := s.cfg.Log.Follow(r.Context(), q)
	if err != nil {
		writeError(w, fail(http.StatusServiceUnavailable, "nats_unavailable", "follow the log: %v", err))
		return
	}
	defer f.Stop()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprint(w, ": fleetd events\n\n")
	_ = rc.Flush()
	ping := time.NewTicker(15 * time.Second)
	defer ping.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-ping.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
		case ev, ok := <-f.Events():
			if !ok {
				return
			}
			data, err := json.Marshal(ev)
			if err != nil {
				continue
			}
			if _, err := fmt.Fprintf(w, "id: %d\nevent: %s\ndata: %s\n\n", ev.Seq, ev.Type(), data); err != nil {
				return
			}
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}
