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
	key  rosterKey
	body []byte
}

// rosterKey is what a roster body depends on: the views' version (which
// moves with every change, also one no event caused, such as a host
// turning stale) and, when a role has a budget, the second — a budget
// frees as time passes, with no event to say so.
type rosterKey struct {
	version uint64
	at      int64
}

// getRoster answers from the cache while the views have not changed,
// with an ETag of their version so a poller that already has it gets 304.
func (s *Server) getRoster(w http.ResponseWriter, r *http.Request) {
	// The version is read before the roster: a body encoded from a
	// roster newer than its label is only ever re-encoded early, never
	// served for a later version than it shows.
	key := rosterKey{version: s.cfg.Views.Version()}
	if s.cfg.Budgets != nil && s.cfg.Roles.HasBudgets() {
		key.at = s.cfg.Now().Unix()
	}
	c := &s.rosterCache
	c.mu.Lock()
	if c.body == nil || c.key != key {
		c.body, c.key = jsonBody(s.roster()), key
	}
	body := c.body
	c.mu.Unlock()

	etag := `"r` + strconv.FormatUint(key.version, 10)
	if key.at != 0 {
		etag += "-" + strconv.FormatInt(key.at, 10)
	}
	etag += `"`
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
