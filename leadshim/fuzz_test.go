package leadshim_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/roles"
)

// FuzzPostMessage feeds POST /message arbitrary bodies. The fleet has no
// agents and no roles, so no body can queue a turn: every answer must be
// a 4xx with a JSON error, and nothing may panic.
func FuzzPostMessage(f *testing.F) {
	fleet := fleettest.New(f)
	s, err := leadshim.New(leadshim.Config{Log: fleet.Log, Views: fleet.Views, NC: fleet.NATS.NC, Roles: roles.Config{}, MaxBody: 64 << 10})
	if err != nil {
		f.Fatal(err)
	}
	h := s.Handler()
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/message", bytes.NewReader(body)))
		if rec.Code < 400 || rec.Code > 499 {
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("content type %q", ct)
		}
		var e leadshim.Error
		if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Err.Code == "" || e.Err.Message == "" {
			t.Fatalf("not a JSON error for %q: %s (%v)", body, rec.Body, err)
		}
	})
}
