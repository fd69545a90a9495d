package leadshim_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
)

func TestBadRequestsGetJSONErrors(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w")
	f.Register("busy", "w")
	f.Register("stuck", "x")
	f.Register("gone", "x")
	f.MustAppend(events.Event{Subject: "busy", Data: events.AgentStatusChanged{Status: events.StatusWorking, Source: "hook"}})
	f.MustAppend(events.Event{Subject: "stuck", Data: events.AgentStatusChanged{Status: events.StatusBlocked, Source: "hook"}})
	ack := f.MustAppend(events.Event{Subject: "gone", Data: events.AgentExited{Reason: "killed"}})
	if err := f.Views.WaitSeq(fleettest.Ctx(t), ack.Seq); err != nil {
		t.Fatal(err)
	}
	_, base := newShim(t, f, func(c *leadshim.Config) { c.MaxBody = 4096 })

	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"unknown field", "POST", "/message", `{"to":"w1","text":"x","prio":1}`, 400, "bad_json"},
		{"not JSON", "POST", "/message", `to=w1`, 400, "bad_json"},
		{"trailing data", "POST", "/message", `{"to":"w1","text":"x"} {}`, 400, "bad_json"},
		{"empty body", "POST", "/message", ``, 400, "bad_json"},
		{"empty text", "POST", "/message", `{"to":"w1","text":"  \n"}`, 400, "empty_text"},
		{"no target", "POST", "/message", `{"text":"x"}`, 400, "bad_to"},
		{"bad agent id", "POST", "/message", `{"to":"W 1","text":"x"}`, 400, "bad_agent"},
		{"bad role", "POST", "/message", `{"to":"role:","text":"x"}`, 400, "bad_role"},
		{"bad timeout", "POST", "/message", `{"to":"w1","text":"x","timeout":"soon"}`, 400, "bad_timeout"},
		{"negative timeout", "POST", "/message", `{"to":"w1","text":"x","timeout":"-1s"}`, 400, "bad_timeout"},
		{"huge timeout", "POST", "/message", `{"to":"w1","text":"x","timeout":"9999h"}`, 400, "bad_timeout"},
		{"unknown agent", "POST", "/message", `{"to":"w9","text":"x"}`, 404, "unknown_agent"},
		{"unknown role", "POST", "/message", `{"to":"role:nobody","text":"x"}`, 404, "unknown_role"},
		{"blocked agent", "POST", "/message", `{"to":"stuck","text":"x","wait":false}`, 409, "blocked"},
		{"exited agent", "POST", "/message", `{"to":"gone","text":"x","wait":false}`, 409, "exited"},
		{"busy agent, no queueing", "POST", "/message", `{"to":"busy","text":"x","queue":false}`, 409, "busy"},
		{"role without a ready agent, no queueing", "POST", "/message", `{"to":"role:x","text":"x","queue":false}`, 429, "role_cap"},
		{"too large", "POST", "/message", `{"to":"w1","text":"` + strings.Repeat("a", 5000) + `"}`, 413, "too_large"},
		{"bad turn id", "GET", "/message/nope", ``, 400, "bad_id"},
		{"unknown turn", "GET", "/message/01JF6Z0000000000000000000A", ``, 404, "unknown_turn"},
		{"bad wait", "GET", "/message/01JF6Z0000000000000000000A?wait=x", ``, 400, "bad_wait"},
		{"wrong method", "GET", "/message", ``, 405, "method_not_allowed"},
		{"wrong method on roster", "DELETE", "/roster", ``, 405, "method_not_allowed"},
		{"no such path", "GET", "/nope", ``, 404, "not_found"},
		{"bad since", "GET", "/events?since=x", ``, 400, "bad_since"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := fleettest.Do(t, tc.method, base+tc.path, tc.body)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %s", status, tc.status, body)
			}
			if e := errorOf(t, body); e.Code != tc.code {
				t.Fatalf("code %q, want %q (%s)", e.Code, tc.code, e.Message)
			}
		})
	}
	// Nothing above queued a turn.
	for _, a := range f.Views.Roster() {
		if a.QueueDepth != 0 {
			t.Errorf("agent %s has %d turns queued by refused sends", a.Agent, a.QueueDepth)
		}
	}
}

func TestBlockedAgentQueuesWhenAskedTo(t *testing.T) {
	f := fleettest.New(t)
	f.Register("stuck", "x")
	ack := f.MustAppend(events.Event{Subject: "stuck", Data: events.AgentStatusChanged{Status: events.StatusBlocked, Source: "hook"}})
	if err := f.Views.WaitSeq(fleettest.Ctx(t), ack.Seq); err != nil {
		t.Fatal(err)
	}
	_, base := newShim(t, f, nil)
	if status, body := post(t, base, `{"to":"stuck","text":"x","wait":false}`); status != http.StatusConflict {
		t.Fatalf("without queue: status %d: %s", status, body)
	}
	if status, body := post(t, base, `{"to":"stuck","text":"x","wait":false,"queue":true}`); status != http.StatusAccepted {
		t.Fatalf("with queue: status %d: %s", status, body)
	}
}

func TestLostNATSAnswers503(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w")
	nc, err := f.NATS.Connect()
	if err != nil {
		t.Fatal(err)
	}
	_, base := newShim(t, f, func(c *leadshim.Config) { c.NC = nc })
	if status, body := fleettest.Do(t, http.MethodGet, base+"/healthz", ""); status != http.StatusOK {
		t.Fatalf("healthz while connected: %d %s", status, body)
	}
	nc.Close()
	status, body := post(t, base, `{"to":"w1","text":"x","wait":false}`)
	if status != http.StatusServiceUnavailable || errorOf(t, body).Code != "nats_unavailable" {
		t.Fatalf("send without NATS: %d %s", status, body)
	}
	if status, body := fleettest.Do(t, http.MethodGet, base+"/healthz", ""); status != http.StatusServiceUnavailable || mustJSON[leadshim.Health](t, body).NATS != "closed" {
		t.Fatalf("healthz without NATS: %d %s", status, body)
	}
}
