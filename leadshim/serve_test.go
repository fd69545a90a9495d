package leadshim_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/projections"
)

// sse reads server-sent events from an open stream.
type sse struct {
	id    uint64
	event string
	data  string
}

func readSSE(t *testing.T, sc *bufio.Scanner, n int) []sse {
	t.Helper()
	var out []sse
	var cur sse
	for len(out) < n && sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.event != "" {
				out = append(out, cur)
			}
			cur = sse{}
		case strings.HasPrefix(line, "id: "):
			cur.id, _ = strconv.ParseUint(line[4:], 10, 64)
		case strings.HasPrefix(line, "event: "):
			cur.event = line[7:]
		case strings.HasPrefix(line, "data: "):
			cur.data = line[6:]
		}
	}
	if len(out) < n {
		t.Fatalf("stream ended after %d events (%v)", len(out), sc.Err())
	}
	return out
}

func openSSE(t *testing.T, url string, header ...string) *bufio.Scanner {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != http.StatusOK || res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("events: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	return bufio.NewScanner(res.Body)
}

func TestEventsStreamTheLogAsServerSentEvents(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w") // after the host's up: registered, then status
	_, base := newShim(t, f, nil)

	// The agents' events only: the host's up and heartbeats are not read.
	const agents = "/events?subject=fleet.agent.>"
	got := readSSE(t, openSSE(t, base+agents+"&since=1"), 2)
	if got[0].event != string(events.TypeAgentRegistered) || got[1].id != got[0].id+1 || got[1].event != string(events.TypeAgentStatus) {
		t.Fatalf("events %+v", got)
	}
	var ce map[string]any
	if err := json.Unmarshal([]byte(got[0].data), &ce); err != nil || ce["specversion"] != "1.0" || ce["subject"] != "w1" || ce["type"] != "fleet.agent.registered" {
		t.Fatalf("data is not the CloudEvents JSON: %s", got[0].data)
	}

	// Resume after the last seen id; new events arrive live.
	sc := openSSE(t, base+agents, "Last-Event-ID", fmt.Sprint(got[0].id))
	ack := f.MustAppend(events.Event{Subject: "w1", Data: events.AgentStatusChanged{Status: events.StatusWorking, Source: "herdr"}})
	resumed := readSSE(t, sc, 2)
	if resumed[0].id != got[1].id || resumed[1].id != ack.Seq {
		t.Fatalf("resumed at %d then %d, want %d then %d", resumed[0].id, resumed[1].id, got[1].id, ack.Seq)
	}
}

func TestRosterSessionsAndRoles(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w")
	f.Register("w2", "w")
	ack := f.MustAppend(events.Event{Subject: "w1", Data: events.AgentSession{SessionID: "s-1", State: "started"}})
	if err := f.Views.WaitSeq(fleettest.Ctx(t), ack.Seq); err != nil {
		t.Fatal(err)
	}
	_, base := newShim(t, f, nil)
	_, body := fleettest.Do(t, http.MethodGet, base+"/roster", "")
	roster := mustJSON[[]projections.Agent](t, body)
	if len(roster) != 2 || roster[0].Agent != "w1" || roster[1].Role != "w" {
		t.Errorf("roster %s", body)
	}
	// Every registered agent serves a session, named after it unless its
	// registration names one; w2's has no conversation id yet.
	_, body = fleettest.Do(t, http.MethodGet, base+"/sessions", "")
	if s := mustJSON[[]projections.Session](t, body); len(s) != 2 || s[0].Name != "w1" || s[0].SessionID != "s-1" || s[1].Name != "w2" || s[1].SessionID != "" {
		t.Errorf("sessions %s", body)
	}
	_, body = fleettest.Do(t, http.MethodGet, base+"/roles", "")
	if r := mustJSON[[]leadshim.RoleState](t, body); len(r) != 1 || r[0].Name != "w" || r[0].Agents != 2 || r[0].Ready != 2 || r[0].Cap != 2 {
		t.Errorf("roles %s", body)
	}
}

func TestRunServesHealthMetricsAndTheMicroService(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w")
	f.RunAgents(10 * time.Millisecond)
	_, base := runShim(t, f, nil)

	status, body := fleettest.Do(t, http.MethodGet, base+"/healthz", "")
	if h := mustJSON[leadshim.Health](t, body); status != http.StatusOK || h.Status != "ok" || h.Applied < h.LastSeq {
		t.Fatalf("healthz %d %s", status, body)
	}

	// The micro service answers the same JSON as HTTP.
	nc := f.NATS.NC
	msg, err := nc.Request(leadshim.ServiceSubjects["send"], []byte(`{"to":"w1","text":"over nats","timeout":"20s"}`), 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	env := mustJSON[leadshim.Envelope](t, msg.Data)
	if env.Status != "replied" || env.Reply != fleettest.Reply("over nats") || msg.Header.Get(micro.ErrorCodeHeader) != "" {
		t.Fatalf("send over nats: %s", msg.Data)
	}
	msg, err = nc.Request(leadshim.ServiceSubjects["turn"], []byte(fmt.Sprintf(`{"id":%q}`, env.ID)), 5*time.Second)
	if err != nil || mustJSON[leadshim.Envelope](t, msg.Data).Status != "replied" {
		t.Fatalf("turn over nats: %s %v", msg.Data, err)
	}
	msg, err = nc.Request(leadshim.ServiceSubjects["send"], []byte(`{"to":"nobody","text":"x"}`), 5*time.Second)
	if err != nil || msg.Header.Get(micro.ErrorCodeHeader) != "404" || errorOf(t, msg.Data).Code != "unknown_agent" {
		t.Fatalf("bad send over nats: %s %v %v", msg.Data, msg.Header, err)
	}
	msg, err = nc.Request(leadshim.ServiceSubjects["roster"], nil, 5*time.Second)
	if err != nil || len(mustJSON[[]projections.Agent](t, msg.Data)) != 1 {
		t.Fatalf("roster over nats: %v", err)
	}
	// `nats micro ls` finds it: the discovery ping names the service.
	ping, err := micro.ControlSubject(micro.PingVerb, leadshim.ServiceName, "")
	if err != nil {
		t.Fatal(err)
	}
	msg, err = nc.Request(ping, nil, 5*time.Second)
	if err != nil || !strings.Contains(string(msg.Data), `"name":"fleet"`) {
		t.Fatalf("ping: %s %v", msg.Data, err)
	}

	// An HTTP turn, then the metrics show it.
	if status, body := post(t, base, `{"to":"w1","text":"over http","timeout":"20s"}`); status != http.StatusOK {
		t.Fatalf("send: %d %s", status, body)
	}
	checkfor.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		_, body := fleettest.Do(t, http.MethodGet, base+"/metrics", "")
		for _, want := range []string{
			`fleetd_turns_total{outcome="replied",reason=""} 2`,
			`fleetd_turn_duration_seconds_count 2`,
			`fleetd_http_requests_total{code="200",route="POST /message"} 1`,
			`fleetd_turns_sent_total{target="agent"} 2`,
			`fleetd_queue_depth 0`,
		} {
			if !strings.Contains(string(body), want) {
				return fmt.Errorf("metrics lack %s", want)
			}
		}
		return nil
	})
}

// The outcome counter counts the turns that end once the shim is made,
// not once its follower is up: the gateway serves before it is. A turn
// that ended before the shim was made is not the shim's to count.
func TestTurnsEndingBeforeTheCounterFollowsAreCounted(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w")
	ctx := context.Background()
	fail := func(reason string) {
		t.Helper()
		if _, err := f.Log.Append(ctx, events.Event{Subject: "w1", Data: events.AgentFailed{Reason: reason}}); err != nil {
			t.Fatal(err)
		}
	}
	fail("before_the_shim")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := leadshim.New(leadshim.Config{Listener: ln, Log: f.Log, Views: f.Views, NC: f.NATS.NC, Host: "h1"})
	if err != nil {
		t.Fatal(err)
	}
	fail("before_run") // the shim is made; its follower is not up yet
	fleettest.Run(t, "shim run", s.Run)
	base := "http://" + ln.Addr().String()
	fail("while_running")
	checkfor.Eventually(t, 10*time.Second, 10*time.Millisecond, func() error {
		_, body := fleettest.Do(t, http.MethodGet, base+"/metrics", "")
		for _, want := range []string{
			`fleetd_turns_total{outcome="failed",reason="before_run"} 1`,
			`fleetd_turns_total{outcome="failed",reason="while_running"} 1`,
		} {
			if !strings.Contains(string(body), want) {
				return fmt.Errorf("metrics lack %s", want)
			}
		}
		if strings.Contains(string(body), "before_the_shim") {
			return errors.New("a turn that ended before the shim was made is counted")
		}
		return nil
	})
}
