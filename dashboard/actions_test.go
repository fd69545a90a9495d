package dashboard_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/dashboard"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/fleettest"
)

// A page the shim gave a CSRF token offers the actions, as the page's
// identity, and stop and restart only for what this host can do: its own
// live agents (not another host's, not an exited one). Without a token,
// and as of the past, it offers none.
func TestThePageOffersActionsOnlyWithItsCSRFToken(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w-1", "w")
	f.Register("w-gone", "w")
	f.MustAppend(events.Event{Subject: "w-gone", Data: events.AgentExited{Reason: "pane closed"}})
	f.MustAppend(events.Event{Subject: "w-far", Data: events.AgentRegistered{Agent: "w-far", Host: "h2", Pane: "p-far", Role: "w"}})
	ack := f.MustAppend(events.Event{Subject: "w-1", Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"}})
	if err := f.Views.WaitSeq(fleettest.Ctx(t), ack.Seq); err != nil {
		t.Fatal(err)
	}
	_, base := serve(t, f, func(c *dashboard.Config) { c.Identity = "ops" })

	status, b := fleettest.Do(t, http.MethodGet, base+"/", "", dashboard.CSRFHeader, "tok3n")
	page := string(b)
	if status != http.StatusOK {
		t.Fatalf("GET /: %d %s", status, page)
	}
	for _, want := range []string{`data-actions="on"`, `data-identity="ops"`, `data-csrf="tok3n"`, `id="send-form"`, `id="spawn-form"`, `<option value="role:w">`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
	rows := map[string]bool{}
	for _, a := range []string{"w-1", "w-gone", "w-far"} {
		i := strings.Index(page, `id="agent-`+a+`"`)
		if i < 0 {
			t.Fatalf("no row for %s", a)
		}
		row := page[i:]
		row = row[:strings.Index(row, "</tr>")]
		rows[a] = strings.Contains(row, "data-acts")
	}
	if !rows["w-1"] || rows["w-gone"] || rows["w-far"] {
		t.Errorf("rows with actions %v, want only w-1's (this host's, live)", rows)
	}

	if _, page := get(t, base+"/"); strings.Contains(page, "data-actions") || strings.Contains(page, `id="send-form"`) {
		t.Error("a page without a CSRF token offers actions")
	}
	status, b = fleettest.Do(t, http.MethodGet, base+"/?at=%23"+"1", "", dashboard.CSRFHeader, "tok3n")
	if status != http.StatusOK || strings.Contains(string(b), `id="send-form"`) || strings.Contains(string(b), "data-acts") {
		t.Errorf("a view of the past offers actions: %d", status)
	}
}
