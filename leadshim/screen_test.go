package leadshim_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
)

func (a *agentsFake) Screen(_ context.Context, agent string) (leadshim.Screen, error) {
	a.asked = append(a.asked, "screen "+agent)
	if err := a.fail[agent]; err != nil {
		return leadshim.Screen{}, err
	}
	return leadshim.Screen{Agent: agent, Pane: "p-1", Text: "> <b>hello</b>\n", Revision: 7}, nil
}

// GET /agents/{id}/screen reads this host's live agent's screen through
// the port and says why not for every other agent at the door, before
// the port is asked; it is a read, so nothing can be posted to it.
func TestScreenReadsThisHostsAgentsOnly(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w-1", "w")
	f.Register("w-gone", "w")
	f.MustAppend(events.Event{Subject: "w-gone", Data: events.AgentExited{Reason: "pane closed"}})
	f.MustAppend(events.Event{Subject: "w-far", Data: events.AgentRegistered{Agent: "w-far", Host: "h2", Pane: "p-far", Role: "w"}})
	f.Register("w-busy", "w")
	f.Register("w-broken", "w")
	fake := &agentsFake{fail: map[string]error{
		"w-busy":   fmt.Errorf("%w: w-busy", leadshim.ErrRestarting),
		"w-broken": errors.New("herdr: pane p-1 not readable"),
	}}
	_, base := newShim(t, f, func(c *leadshim.Config) { c.Agents = fake })
	_, noHerdr := newShim(t, f, nil)
	if err := f.Views.WaitSeq(fleettest.Ctx(t), f.MustAppend(events.Event{Subject: "w-1", Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"}}).Seq); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, base, agent string
		status            int
		want              string
	}{
		{"read", base, "w-1", http.StatusOK, `"text":"> <b>hello</b>\n","revision":7`},
		{"unknown agent", base, "ghost", http.StatusNotFound, "unknown_agent"},
		{"exited agent", base, "w-gone", http.StatusConflict, "agent_exited"},
		{"another host's agent", base, "w-far", http.StatusConflict, "other_host"},
		{"restart running", base, "w-busy", http.StatusConflict, "restarting"},
		{"herdr failed", base, "w-broken", http.StatusBadGateway, "herdr_failed"},
		{"no herdr", noHerdr, "w-1", http.StatusServiceUnavailable, "no_herdr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, b := fleettest.Do(t, http.MethodGet, tc.base+"/agents/"+tc.agent+"/screen", "")
			if status != tc.status || !strings.Contains(string(b), tc.want) {
				t.Errorf("GET %s's screen: %d %s, want %d with %s", tc.agent, status, b, tc.status, tc.want)
			}
		})
	}
	if status, b := fleettest.Do(t, http.MethodPost, base+"/agents/w-1/screen", `{"text":"rm -rf /"}`); status < 400 {
		t.Errorf("POST screen: %d %s, want refused: the screen is read-only", status, b)
	}
	if got, want := strings.Join(fake.asked, "; "), "screen w-1; screen w-busy; screen w-broken"; got != want {
		t.Errorf("the port was asked %q, want %q", got, want)
	}
}

// The client's Screen reads the same answer.
func TestClientScreen(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w-1", "w")
	_, base := newShim(t, f, func(c *leadshim.Config) { c.Agents = &agentsFake{} })
	if err := f.Views.WaitSeq(fleettest.Ctx(t), f.MustAppend(events.Event{Subject: "w-1", Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"}}).Seq); err != nil {
		t.Fatal(err)
	}
	sc, err := leadshim.NewClient(base, "").Screen(fleettest.Ctx(t), "w-1")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := sc, (leadshim.Screen{Agent: "w-1", Pane: "p-1", Text: "> <b>hello</b>\n", Revision: 7}); got != want {
		t.Errorf("Screen = %+v, want %+v", got, want)
	}
}
