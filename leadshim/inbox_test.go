package leadshim_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/inbox"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
)

// A read of an inbox no one opened opens nothing (404 no_inbox), unless
// it is an agent of the roster's; POST /inbox/{agent}/open opens one, and
// the client does so for its own inbox.
func TestAnInboxOpensForTheRosterOrOnPurposeNeverOnARead(t *testing.T) {
	f := fleettest.New(t)
	f.Register("main-a", "w")
	boxes, err := inbox.New(inbox.Config{Log: f.Log, JS: f.NATS.JS})
	if err != nil {
		t.Fatal(err)
	}
	_, base := newShim(t, f, func(c *leadshim.Config) { c.Inbox = boxes })
	known := func(agent string) bool {
		t.Helper()
		ok, err := boxes.Known(fleettest.Ctx(t), agent)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}

	if status, body := fleettest.Do(t, http.MethodGet, base+"/inbox/ghost", ""); status != http.StatusNotFound || !strings.Contains(string(body), "no_inbox") {
		t.Errorf("GET /inbox/ghost = %d %s, want 404 no_inbox", status, body)
	}
	if known("ghost") {
		t.Error("a read opened ghost's inbox")
	}
	if status, body := fleettest.Do(t, http.MethodGet, base+"/inbox/main-a", ""); status != http.StatusOK || !known("main-a") {
		t.Errorf("GET /inbox/main-a (of the roster) = %d %s, want 200 and its inbox open", status, body)
	}
	if status, body := fleettest.Do(t, http.MethodPost, base+"/inbox/lead-x/open", ""); status != http.StatusOK || !known("lead-x") {
		t.Errorf("POST /inbox/lead-x/open = %d %s, want 200 and its inbox open", status, body)
	}
	c := leadshim.NewClient(base, "")
	if _, err := c.Inbox(fleettest.Ctx(t), "lead-y", 0, ""); err != nil || !known("lead-y") {
		t.Errorf("the client reading its own inbox: %v, open %v; want it opened", err, known("lead-y"))
	}
}
