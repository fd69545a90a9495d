package leadshim

import (
	"net/http"
	"strconv"
	"sync"
)

// rosterCache holds GET /roster's body as encoded at one projection
// position, so a thousand-agent roster is encoded once per change of the
// projection, not once per request: dashboards, leads and `fleetd
// roster` poll it, and at 1,000 agents the encoding was most of a
// request's time.
type rosterCache struct {
	mu   sync.Mutex
	seq  uint64
	body []byte
}

// getRoster answers from the cache while the projection has applied
// nothing new, with an ETag of that position so a poller that already
// has it gets 304.
func (s *Server) getRoster(w http.ResponseWriter, r *http.Request) {
	// The position is read before the roster: a body encoded from a
	// roster newer than its label is only ever re-encoded early, never
	// served for a later position than it shows.
	seq := s.cfg.Views.Applied()
	c := &s.roster
	c.mu.Lock()
	if c.body == nil || c.seq != seq {
		c.body, c.seq = jsonBody(s.cfg.Views.Roster()), seq
	}
	body := c.body
	c.mu.Unlock()

	etag := `"r` + strconv.FormatUint(seq, 10) + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Cache-Control", "no-cache")
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}
