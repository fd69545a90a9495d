package claudehook

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/embeddednats"
	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/internal/natslite"
)

// storedMsg is a message as the FLEET stream holds it.
type storedMsg struct {
	subject, id, data string
	headers           nats.Header
}

// storedMsgs reads every message of the FLEET stream, in order.
func storedMsgs(t *testing.T, js jetstream.JetStream) []storedMsg {
	t.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, events.Stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []storedMsg
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, storedMsg{subject: m.Subject, id: m.Header.Get(jetstream.MsgIDHeader), data: string(m.Data), headers: m.Header})
	}
	return out
}

// hookEvents are the events of every hook, as Run builds them, with a
// long non-ASCII reply, an HTML-ish prompt and a worktree.
func hookEvents() []events.Event {
	at := time.Date(2026, 5, 1, 12, 0, 0, 123456789, time.UTC)
	ids := events.NewULIDSource(func() time.Time { return at })
	h := hookRun{agent: "w-lite", host: "h1", pane: "p-1", now: func() time.Time { return at }, newID: ids,
		worktree: events.Worktree{Branch: "fleet/w-lite", Head: "abc123", Dirty: 2, Ahead: 1}}
	p := Payload{SessionID: "4f52aa3c-1e0b-4d6a-9f21-7c8e5d4b3a10", TranscriptPath: "/t.jsonl", Cwd: "/proj", PromptID: "p1",
		Source: "startup", Model: "claude-x", Prompt: "<b>é & \"q\"</b>\n\ttab", LastAssistantMessage: strings.Repeat("ünïcode ✓ ", 5000),
		NotificationType: "permission_prompt", Message: "may I?", Reason: "exit", Error: []byte(`{"type":"overloaded","message":"busy"}`)}
	var evs []events.Event
	for _, hook := range Hooks {
		evs = append(evs, h.build(hook, p, Usage{Model: "claude-x", Tokens: events.Tokens{In: 5, Out: 7}, CostUSD: 0.25})...)
	}
	for i := range evs {
		evs[i].CorrelationID = "01JTURN0000000000000000000"
	}
	return evs
}

// The hook's own client stores exactly what events.Log over nats.go
// stores: the same subjects, the same bytes, the same dedupe id and
// expected stream.
func TestTheHooksClientAppendsWhatTheLogAppends(t *testing.T) {
	ctx := context.Background()
	ref, refLog := fleettest.StartLog(t, events.Options{}, natstest.WithTCP())
	lite, _ := fleettest.StartLog(t, events.Options{}, natstest.WithTCP())
	evs := hookEvents()
	for _, ev := range evs {
		if _, err := refLog.Append(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	log := dialLog(t, lite.ClientURL())
	for _, ev := range evs {
		ack, err := log.Append(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		if ack.ID != ev.ID || ack.Seq == 0 || ack.Duplicate {
			t.Errorf("ack %+v for %s", ack, ev.ID)
		}
	}
	got, want := storedMsgs(t, lite.JS), storedMsgs(t, ref.JS)
	if len(got) != len(want) || len(want) != len(evs) {
		t.Fatalf("stored %d messages, nats.go stored %d of %d events", len(got), len(want), len(evs))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.subject != w.subject || g.id != w.id || g.data != w.data {
			t.Errorf("message %d: got %s %s %.80q…, want %s %s %.80q…", i, g.subject, g.id, g.data, w.subject, w.id, w.data)
		}
		for _, h := range []string{jetstream.MsgIDHeader, jetstream.ExpectedStreamHeader} {
			if g.headers.Get(h) != w.headers.Get(h) {
				t.Errorf("message %d: header %s %q, want %q", i, h, g.headers.Get(h), w.headers.Get(h))
			}
		}
	}
	// Read back through the log, they are the same events.
	reg := events.NewRegistry()
	for i := range want {
		g, err1 := reg.Decode(got[i].subject, []byte(got[i].data))
		w, err2 := reg.Decode(want[i].subject, []byte(want[i].data))
		if err1 != nil || err2 != nil || g.ID != w.ID || g.Type() != w.Type() || g.CorrelationID != w.CorrelationID {
			t.Errorf("event %d decodes as %v %v / %v %v", i, g.ID, err1, w.ID, err2)
		}
	}
}

// An event appended again (a retry, a replay) is stored once.
func TestTheHooksClientDedupesARetriedID(t *testing.T) {
	ctx := context.Background()
	srv, _ := fleettest.StartLog(t, events.Options{}, natstest.WithTCP())
	log := dialLog(t, srv.ClientURL())
	ev := hookEvents()[0]
	first, err := log.Append(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	again, err := log.Append(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if !again.Duplicate || again.Seq != first.Seq || first.Duplicate {
		t.Errorf("first %+v, again %+v; want the second a duplicate of the first", first, again)
	}
	if n := len(storedMsgs(t, srv.JS)); n != 1 {
		t.Errorf("stored %d messages, want 1", n)
	}
}

// An expected last sequence is sent as events.Log sends it, and a moved
// aggregate is JetStream's wrong-last-sequence refusal (10071).
func TestTheHooksClientSendsTheExpectedSequence(t *testing.T) {
	ctx := context.Background()
	srv, _ := fleettest.StartLog(t, events.Options{}, natstest.WithTCP())
	log := dialLog(t, srv.ClientURL())
	evs := hookEvents()
	if _, err := log.Append(ctx, evs[0], events.ExpectLastSeqFor(0, "fleet.agent.w-lite.>")); err != nil {
		t.Fatal(err)
	}
	_, err := log.Append(ctx, evs[2], events.ExpectLastSeqFor(0, "fleet.agent.w-lite.>"))
	var apiErr *natslite.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10071 {
		t.Errorf("append over a moved aggregate: %v; want JetStream's 10071", err)
	}
	if _, err := log.Append(ctx, evs[2], events.ExpectLastSeq(0)); err != nil {
		t.Errorf("append to a subject with nothing on it, expecting 0: %v", err)
	}
}

// The token comes from FLEET_NATS_TOKEN or the URL; a wrong one is
// refused at once, not at the timeout.
func TestTheHooksClientSignsInWithAToken(t *testing.T) {
	ctx := context.Background()
	srv, _ := fleettest.StartLog(t, events.Options{}, natstest.WithTCP(), natstest.WithClientOptions(nats.Token("s3cret")),
		natstest.WithConfig(func(c *embeddednats.Config) { c.Token = "s3cret" }))
	url := srv.ClientURL()
	withURLToken := strings.Replace(url, "nats://", "nats://s3cret@", 1)
	for _, tc := range []struct {
		name, url, token string
		ok               bool
	}{
		{"the env's token", url, "s3cret", true},
		{"the URL's token", withURLToken, "", true},
		{"no token", url, "", false},
		{"a wrong token", url, "guess", false},
	} {
		env := map[string]string{"FLEET_NATS_URL": tc.url, "FLEET_NATS_TOKEN": tc.token}
		start := time.Now()
		nc, err := dial(ctx, func(k string) string { return env[k] }, "test", 5*time.Second)
		if err == nil {
			// The hook's dial is pipelined: the server's answer to the
			// login comes with the first reply (any reply, a 503 too).
			rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			_, err = nc.Request(rctx, rosterGetSubject("w-lite"), nil, nil)
			cancel()
			nc.Close()
			if errors.Is(err, natslite.ErrNoResponders) {
				err = nil
			}
		}
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
		if err != nil && !errors.Is(err, natslite.ErrServer) {
			t.Errorf("%s: %v, want the server's refusal", tc.name, err)
		}
		if err != nil && time.Since(start) > 2*time.Second {
			t.Errorf("%s: refused only after %v", tc.name, time.Since(start))
		}
	}
}

func dialLog(t *testing.T, url string) *natsLog {
	t.Helper()
	nc, err := dial(context.Background(), func(k string) string {
		if k == "FLEET_NATS_URL" {
			return url
		}
		return ""
	}, "test", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &natsLog{nc: nc, registry: events.NewRegistry(), source: "fleetd/test/hook", now: time.Now, newID: events.NewULIDSource(time.Now)}
}
