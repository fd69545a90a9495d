package leadshim_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/roles"
)

func TestBlockingSendAnswersWithTheFullReplyEnvelope(t *testing.T) {
	forKinds(t, testBlockingSendAnswersWithTheFullReplyEnvelope)
}

func testBlockingSendAnswersWithTheFullReplyEnvelope(t *testing.T, kind fleettest.Kind) {
	f := fleettest.NewKind(t, kind)
	f.Register("w-claude-1", "w-claude")
	f.RunAgents(30 * time.Millisecond)
	_, base := newShim(t, f, nil)

	status, body := post(t, base, `{"to":"w-claude-1","text":"add the tests","from":"lead","context":["k1","tag:api"],"timeout":"20s","wait":true}`)
	if status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	raw := mustJSON[map[string]json.RawMessage](t, body)
	for _, k := range []string{"id", "agent", "role", "model", "session_id", "status", "reply", "tokens", "queued_at", "submitted_at", "replied_at", "duration_ms"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("envelope has no %q: %s", k, body)
		}
	}
	env := mustJSON[leadshim.Envelope](t, body)
	if env.Agent != "w-claude-1" || env.Role != "w-claude" || env.Model != "model-of-w-claude-1" || env.SessionID != "sess-w-claude-1" ||
		env.Status != "replied" || env.Reply != fleettest.Reply("add the tests") || env.Tokens != (leadshim.Tokens{In: 13, Out: 7}) {
		t.Errorf("envelope %+v", env)
	}
	if env.QueuedAt == nil || env.SubmittedAt == nil || env.RepliedAt == nil || env.SubmittedAt.Before(*env.QueuedAt) || env.RepliedAt.Before(*env.SubmittedAt) {
		t.Errorf("times: queued %v submitted %v replied %v", env.QueuedAt, env.SubmittedAt, env.RepliedAt)
	}
	if env.DurationMS < 30 || time.Duration(env.DurationMS)*time.Millisecond > 20*time.Second {
		t.Errorf("duration_ms %d, want at least the agent's 30 ms", env.DurationMS)
	}
	// The queued event: id = correlation id = turn id, text, context, deadline.
	evs := eventstest.ReadAll(t, f.Log, events.Query{Subjects: []string{"fleet.agent.w-claude-1.queued"}})
	if len(evs) != 1 {
		t.Fatalf("%d queued events", len(evs))
	}
	q := evs[0].Data.(events.AgentQueued)
	if evs[0].ID != env.ID || evs[0].CorrelationID != env.ID || q.From != "lead" || !slices.Equal(q.Context, []string{"k1", "tag:api"}) || q.Deadline.IsZero() {
		t.Errorf("queued event %+v %+v, turn %s", evs[0], q, env.ID)
	}
	if d := q.Deadline.Sub(evs[0].Time); d < 19*time.Second || d > 21*time.Second {
		t.Errorf("deadline %s after queueing, want the 20s timeout", d)
	}
}

func TestAsyncSendAnswers202AndGetReattaches(t *testing.T) {
	forKinds(t, testAsyncSendAnswers202AndGetReattaches)
}

func testAsyncSendAnswers202AndGetReattaches(t *testing.T, kind fleettest.Kind) {
	f := fleettest.NewKind(t, kind)
	f.Register("w1", "w")
	_, base := newShim(t, f, nil)

	acc := postAsync(t, base, `{"to":"w1","text":"later","wait":false}`)
	if acc.Status != "queued" || acc.ID == "" {
		t.Fatalf("accepted %+v", acc)
	}
	// Read-your-writes: the turn is there at once, queued.
	status, body := fleettest.Do(t, http.MethodGet, base+"/message/"+acc.ID, "")
	if env := mustJSON[leadshim.Envelope](t, body); status != http.StatusOK || env.Status != "queued" || env.Agent != "w1" {
		t.Fatalf("GET at once: %d %s", status, body)
	}
	f.RunAgents(10 * time.Millisecond)
	status, body = fleettest.Do(t, http.MethodGet, base+"/message/"+acc.ID+"?wait=20s", "")
	if env := mustJSON[leadshim.Envelope](t, body); status != http.StatusOK || env.Status != "replied" || env.Reply != fleettest.Reply("later") {
		t.Fatalf("GET ?wait: %d %s", status, body)
	}
}

func TestTimeoutAnswers504WithTheTurnID(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w") // nobody plays it: the turn never finishes
	_, base := newShim(t, f, nil)
	status, body := post(t, base, `{"to":"w1","text":"slow","timeout":"300ms"}`)
	if status != http.StatusGatewayTimeout {
		t.Fatalf("status %d: %s", status, body)
	}
	e := errorOf(t, body)
	if e.Code != "timeout" || e.ID == "" {
		t.Fatalf("error %+v", e)
	}
	if turn, ok, _ := f.Views.Turn(fleettest.Ctx(t), e.ID); !ok || turn.Agent != "w1" {
		t.Fatalf("the 504's id %s does not name the queued turn: %+v", e.ID, turn)
	}
	// A long-poll that ends first answers the state, not an error.
	status, body = fleettest.Do(t, http.MethodGet, base+"/message/"+e.ID+"?wait=100ms", "")
	if env := mustJSON[leadshim.Envelope](t, body); status != http.StatusOK || env.Status != "queued" {
		t.Fatalf("GET ?wait=100ms: %d %s", status, body)
	}
}

func TestFailedTurnsAnswerByReason(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w")
	_, base := newShim(t, f, nil)
	for _, tc := range []struct {
		reason string
		status int
	}{
		{events.ReasonBlocked, http.StatusConflict},
		{events.ReasonTimeout, http.StatusGatewayTimeout},
		{events.ReasonPaneExited, http.StatusOK},
	} {
		t.Run(tc.reason, func(t *testing.T) {
			type result struct {
				status int
				body   []byte
			}
			res := make(chan result, 1)
			before := f.Views.Applied()
			go func() {
				s, b := post(t, base, `{"to":"w1","text":"x","timeout":"20s"}`)
				res <- result{s, b}
			}()
			var id string
			checkfor.Eventually(t, 10*time.Second, 5*time.Millisecond, func() error {
				for _, ev := range eventstest.ReadAll(t, f.Log, events.Query{FromSeq: before + 1, Subjects: []string{"fleet.agent.w1.queued"}}) {
					id = ev.ID
				}
				if id == "" {
					return fmt.Errorf("no turn queued yet")
				}
				return nil
			})
			f.MustAppend(events.Event{Subject: "w1", CorrelationID: id, Data: events.AgentFailed{Reason: tc.reason, Message: "by the test"}})
			r := <-res
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.status == http.StatusOK {
				if env := mustJSON[leadshim.Envelope](t, r.body); env.Status != "failed" || env.Reason != tc.reason {
					t.Fatalf("envelope %s", r.body)
				}
			} else if e := errorOf(t, r.body); e.ID != id {
				t.Fatalf("error %+v does not carry the turn id %s", e, id)
			}
		})
	}
}

func TestTwentyConcurrentRoleSendsStayWithinTheCap(t *testing.T) {
	forKinds(t, testTwentyConcurrentRoleSendsStayWithinTheCap)
}

func testTwentyConcurrentRoleSendsStayWithinTheCap(t *testing.T, kind fleettest.Kind) {
	f := fleettest.NewKind(t, kind)
	for i := range 4 {
		f.Register(fmt.Sprintf("w-%d", i+1), "w")
	}
	f.RunAgents(15 * time.Millisecond)
	rc := roles.Config{Roles: map[string]roles.Role{"w": {Cap: 2}}}
	startRouter(t, f, rc)
	_, base := newShim(t, f, func(c *leadshim.Config) { c.Roles = rc })

	var wg sync.WaitGroup
	envs := make([]leadshim.Envelope, 20)
	for i := range envs {
		wg.Go(func() {
			status, body := post(t, base, fmt.Sprintf(`{"to":"role:w","text":"task %d","timeout":"60s"}`, i))
			if status != http.StatusOK {
				t.Errorf("send %d: %d %s", i, status, body)
				return
			}
			envs[i] = mustJSON[leadshim.Envelope](t, body)
		})
	}
	wg.Wait()
	for i, env := range envs {
		if env.Status != "replied" || env.Reply != fleettest.Reply(fmt.Sprintf("task %d", i)) || env.Role != "w" || env.Agent == "" {
			t.Errorf("send %d: %+v", i, env)
		}
	}
	evs := eventstest.ReadAll(t, f.Log, events.Query{})
	if got := fleettest.MaxInFlight(evs, "w"); got != 2 {
		t.Errorf("at most %d role turns were in flight at once; want exactly the cap, 2", got)
	}
}

func TestTurnSurvivesAShimRestart(t *testing.T) { forKinds(t, testTurnSurvivesAShimRestart) }

func testTurnSurvivesAShimRestart(t *testing.T, kind fleettest.Kind) {
	f := fleettest.NewKind(t, kind)
	f.Register("w1", "w")
	_, base := newShim(t, f, nil)
	id := postAsync(t, base, `{"to":"w1","text":"survive","wait":false}`).ID

	// A new fleetd over the same NATS: new log client, views rebuilt from the log.
	g := fleettest.Over(t, f.NATS, f.Kind)
	_, base2 := newShim(t, g, nil)
	got := make(chan []byte, 1)
	go func() {
		status, body := fleettest.Do(t, http.MethodGet, base2+"/message/"+id+"?wait=20s", "")
		if status != http.StatusOK {
			t.Errorf("GET after restart: %d %s", status, body)
		}
		got <- body
	}()
	g.RunAgents(10 * time.Millisecond)
	env := mustJSON[leadshim.Envelope](t, <-got)
	if env.ID != id || env.Status != string(lifecycle.StateReplied) || env.Reply != fleettest.Reply("survive") {
		t.Fatalf("after restart: %+v", env)
	}
}
