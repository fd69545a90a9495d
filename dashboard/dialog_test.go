package dashboard_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/dashboard"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/fleettest"
)

// A blocked agent's dialog shows in its fleet row ("asks: …", escaped,
// opening its agent view) and in its agent view with an answer button per
// option — for any host's agent, since an answer goes through the log to
// the agent's own gateway. The screen view is offered only for a live
// agent of this host; a view of the past shows the dialog without buttons
// or screen, and an answered dialog is gone.
func TestTheDialogAndTheScreenInTheViews(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w-1", "w")
	f.MustAppend(events.Event{Subject: "w-far", Data: events.AgentRegistered{Agent: "w-far", Host: "h2", Pane: "p-far", Role: "w"}})
	dialog := events.AgentDialog{State: events.DialogOpen, Title: "Bash command", Question: "Run <rm -rf build>?", Detail: "clean the build",
		Options: []string{"Yes", "Yes, and don't ask again", "No"}}
	for _, a := range []string{"w-1", "w-far"} {
		f.MustAppend(events.Event{Subject: a, Data: events.AgentStatusChanged{Status: events.StatusBlocked, Source: "hook"}})
		f.MustAppend(events.Event{Subject: a, Data: dialog})
	}
	open := f.MustAppend(events.Event{Subject: "h1", Data: events.HostUp{Host: "h1"}})
	if err := f.Views.WaitSeq(fleettest.Ctx(t), open.Seq); err != nil {
		t.Fatal(err)
	}
	_, base := serve(t, f, nil)
	page := func(query string) string {
		t.Helper()
		status, b := fleettest.Do(t, http.MethodGet, base+"/?"+query, "", dashboard.CSRFHeader, "tok3n")
		if status != http.StatusOK {
			t.Fatalf("GET /?%s: %d %s", query, status, b)
		}
		return string(b)
	}

	fleet := page("")
	for _, a := range []string{"w-1", "w-far"} {
		if want := `href="/?id=` + a + `&amp;view=agent#agent-dialog" title="Bash command: clean the build">asks: Run &lt;rm -rf build&gt;?</a>`; !strings.Contains(fleet, want) {
			t.Errorf("%s's row lacks %s", a, want)
		}
	}
	buttons := []string{`data-option="1" data-label="Yes">1. Yes</button>`, `data-option="2" data-label="Yes, and don&#39;t ask again">2. Yes, and don&#39;t ask again</button>`, `data-option="3" data-label="No">3. No</button>`}
	for _, tc := range []struct {
		query        string
		buttons      bool
		dialogShown  bool
		screenOffers bool
	}{
		{query: "view=agent&id=w-1", buttons: true, dialogShown: true, screenOffers: true},
		{query: "view=agent&id=w-far", buttons: true, dialogShown: true},
		{query: fmt.Sprintf("view=agent&id=w-1&at=%%23%d", open.Seq), dialogShown: true},
	} {
		v := page(tc.query)
		if got := strings.Contains(v, `<p class="question" id="dialog-question">Run &lt;rm -rf build&gt;?</p>`); got != tc.dialogShown {
			t.Errorf("%s: shows the question %v, want %v", tc.query, got, tc.dialogShown)
		}
		for _, b := range buttons {
			if got := strings.Contains(v, b); got != tc.buttons {
				t.Errorf("%s: offers %s: %v, want %v", tc.query, b, got, tc.buttons)
			}
		}
		if got := strings.Contains(v, `id="agent-screen"`); got != tc.screenOffers {
			t.Errorf("%s: offers the screen %v, want %v", tc.query, got, tc.screenOffers)
		}
	}

	ack := f.MustAppend(events.Event{Subject: "w-1", Data: events.AgentDialog{State: events.DialogAnswered, Title: dialog.Title, Question: dialog.Question,
		Options: dialog.Options, Answer: 1, By: "dashboard"}})
	if err := f.Views.WaitSeq(fleettest.Ctx(t), ack.Seq); err != nil {
		t.Fatal(err)
	}
	if v := page("view=agent&id=w-1"); strings.Contains(v, `id="agent-dialog"`) {
		t.Error("an answered dialog is still shown")
	}
}
