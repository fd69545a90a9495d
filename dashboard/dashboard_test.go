package dashboard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/samber/lo"

	"github.com/fleetd/fleetd/dashboard"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/lifecycle"
)

// serve runs a dashboard over f on a test server and returns its URL.
func serve(t testing.TB, f *fleettest.Fleet, mod func(*dashboard.Config)) (*dashboard.Server, string) {
	t.Helper()
	cfg := dashboard.Config{Log: f.Log, Fleet: f.Views.(dashboard.Fleet), Host: "h1", Version: "test", Batch: 20 * time.Millisecond}
	if mod != nil {
		mod(&cfg)
	}
	d, err := dashboard.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(d)
	t.Cleanup(hs.Close)
	return d, hs.URL
}

func get(t testing.TB, u string) (int, string) {
	t.Helper()
	status, b := fleettest.Do(t, http.MethodGet, u, "")
	return status, string(b)
}

func getJSON[T any](t testing.TB, u string) T {
	t.Helper()
	status, b := fleettest.Do(t, http.MethodGet, u, "")
	if status != http.StatusOK {
		t.Fatalf("GET %s: %d %s", u, status, b)
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("GET %s: %v: %s", u, err, b)
	}
	return v
}

// send queues a turn on agent and returns its id.
func send(f *fleettest.Fleet, agent, text string, mod ...func(*events.AgentQueued)) string {
	f.T.Helper()
	d := events.AgentQueued{From: "lead", Text: text}
	for _, m := range mod {
		m(&d)
	}
	ack := f.MustAppend(events.Event{Subject: agent, Data: d})
	return ack.ID
}

// waitTurn waits until the views show turn id final.
func waitTurn(t testing.TB, f *fleettest.Fleet, id string) lifecycle.Turn {
	t.Helper()
	tu, err := f.Views.WaitTurn(fleettest.Ctx(t), id, func(t lifecycle.Turn) bool { return t.State.Final() })
	if err != nil {
		t.Fatalf("turn %s: %v", id, err)
	}
	return tu
}

func TestConfigIsValidated(t *testing.T) {
	_, err := dashboard.New(dashboard.Config{MaxStreams: -1})
	for _, want := range []string{"no Log", "no Fleet", "MaxStreams -1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("New with nothing: %v, want it to say %q", err, want)
		}
	}
}

// Every view renders what the fleet holds, on the page and as a
// fragment; a missing turn or agent says so; a bad query is 400.
func TestEveryViewShowsTheFleet(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w-1", "w-local")
	f.Register("w-2", "w-claude")
	f.MustAppend(events.Event{Subject: "h1", Data: events.HostUp{Host: "h1"}})
	f.RunAgents(5*time.Millisecond, "w-1")
	done := waitTurn(t, f, send(f, "w-1", "write the <tests>", func(q *events.AgentQueued) { q.Job = "j1" }))
	open := send(f, "w-2", "nobody plays w-2")
	f.MustAppend(events.Event{Subject: "j1", Data: events.JobCreated{Goal: "ship it", Tasks: []events.TaskSpecBrief{{ID: "a", To: "role:w-local"}, {ID: "b", To: "w-2", Needs: []string{"a"}}}}})
	f.MustAppend(events.Event{Subject: "j1", Data: events.JobSliced{Task: "a", Items: []string{"spec"}, Bytes: 12, Budget: 1000}})
	ack := f.MustAppend(events.Event{Subject: "j1", Data: events.JobTask{Task: "a", State: events.TaskSent, Turn: done.ID, Agent: "w-1"}})
	if err := f.Views.WaitSeq(fleettest.Ctx(t), ack.Seq); err != nil {
		t.Fatal(err)
	}
	_, base := serve(t, f, nil)

	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"", []string{`id="agent-w-1"`, `data-state="idle"`, `id="agent-w-2"`, `<td class="n">1</td>`, "heartbeat", "w-local", "w-claude"}},
		{"view=turns", []string{`id="turn-` + done.ID, `id="turn-` + open, "write the &lt;tests&gt;"}},
		{"view=turns&agent=w-2", []string{`id="turn-` + open}},
		{"view=turns&state=replied", []string{`id="turn-` + done.ID}},
		{"view=turns&role=w-local", []string{`id="turn-` + done.ID}},
		{"view=turn&id=" + done.ID, []string{`data-step="queued"`, `data-step="typed"`, `data-step="submitted"`, `data-step="replied"`, "echo: write the &lt;tests&gt;"}},
		{"view=agent&id=w-1", []string{`id="agent-head"`, "p-w-1", `data-turn="` + done.ID + `"`, "registered in pane p-w-1"}},
		{"view=jobs", []string{`data-job="j1"`, "ship it", `id="task-a"`, `data-state="sent"`, "spec", `href="#task-a"`}},
		{"view=log&subject=" + url.QueryEscape("fleet.agent.w-1.>"), []string{`id="log-rows"`, "registered"}},
		{"view=cost&by=job", []string{`data-key="j1"`, `id="cost-total"`}},
		{"view=turn&id=nope", []string{`id="missing"`}},
	} {
		status, body := get(t, base+"/ui/view?"+tc.query)
		if status != http.StatusOK {
			t.Errorf("fragment %q: %d %s", tc.query, status, body)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(body, w) {
				t.Errorf("fragment %q lacks %q", tc.query, w)
			}
		}
		status, page := get(t, base+"/?"+tc.query)
		if status != http.StatusOK || !strings.Contains(page, `<main id="view"`) || !strings.Contains(page, tc.want[0]) {
			t.Errorf("page %q: %d, lacks %q", tc.query, status, tc.want[0])
		}
	}
	if _, body := get(t, base+"/ui/view?view=turns&agent=w-2"); strings.Contains(body, done.ID) {
		t.Errorf("turns of w-2 list w-1's turn")
	}
	for _, q := range []string{"view=nope", "view=turn", "view=log&subject=other.>", "view=cost&by=moon", "at=yesterday", "view=turns&state=odd"} {
		if status, body := get(t, base+"/ui/view?"+q); status != http.StatusBadRequest {
			t.Errorf("%q: %d %s, want 400", q, status, body)
		}
	}
	if status, _ := get(t, base+"/ui/static/app.js"); status != http.StatusOK {
		t.Errorf("app.js: %d", status)
	}
}

// A view as of a point before a turn does not show it; after, it does;
// the roster API says what it is as of.
func TestViewsAsOfAPointInTheLog(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w-1", "w-local")
	f.RunAgents(5 * time.Millisecond)
	first := waitTurn(t, f, send(f, "w-1", "first"))
	between := time.Now()
	f.Register("w-late", "w-local")
	second := waitTurn(t, f, send(f, "w-1", "second"))
	_, base := serve(t, f, nil)
	at := url.QueryEscape(between.UTC().Format(time.RFC3339Nano))

	_, body := get(t, base+"/ui/view?view=turns&at="+at)
	if !strings.Contains(body, first.ID) || strings.Contains(body, second.ID) {
		t.Errorf("turns as of between: first listed %v, second listed %v", strings.Contains(body, first.ID), strings.Contains(body, second.ID))
	}
	_, body = get(t, base+"/ui/view?view=turn&id="+second.ID+"&at="+at)
	if !strings.Contains(body, `id="missing"`) {
		t.Errorf("the second turn as of before it was queued is not missing")
	}
	_, page := get(t, base+"/?view=turns&at="+at)
	for _, want := range []string{`id="travel-banner"`, `id="back-to-live"`, `data-live="false"`} {
		if !strings.Contains(page, want) {
			t.Errorf("page of the past lacks %q", want)
		}
	}
	if _, page := get(t, base+"/?view=turns"); strings.Contains(page, `id="travel-banner"`) {
		t.Errorf("the live page says it is in the past")
	}

	r := getJSON[dashboard.RosterAt](t, base+"/ui/api/roster?at="+at)
	if len(r.Agents) != 1 || r.Agents[0].Agent != "w-1" || r.Live || r.Seq == 0 || !r.At.Equal(between) {
		t.Errorf("roster as of between: %+v", r)
	}
	live := getJSON[dashboard.RosterAt](t, base+"/ui/api/roster")
	if len(live.Agents) != 2 || !live.Live {
		t.Errorf("live roster: %d agents, live %v", len(live.Agents), live.Live)
	}
	seq := getJSON[dashboard.RosterAt](t, fmt.Sprintf("%s/ui/api/roster?at=%%23%d", base, r.Seq))
	if seq.Seq != r.Seq || len(seq.Agents) != 1 {
		t.Errorf("roster as of #%d: seq %d, %d agents", r.Seq, seq.Seq, len(seq.Agents))
	}
	empty := getJSON[dashboard.RosterAt](t, base+"/ui/api/roster?at="+url.QueryEscape(between.Add(-time.Hour).Format(time.RFC3339)))
	if len(empty.Agents) != 0 || empty.Seq != 0 {
		t.Errorf("roster before anything: %+v", empty)
	}
	if _, body := get(t, base+"/ui/view?view=log&at="+url.QueryEscape(between.Add(-time.Hour).Format(time.RFC3339))); strings.Contains(body, "<details") {
		t.Errorf("the log before anything shows events")
	}
}

// checkTimeline waits for turn id's end in f's fold and returns its
// timeline as the API answers it, failing t unless its steps are want,
// in order.
func checkTimeline(t *testing.T, f *fleettest.Fleet, base, id string, want ...string) dashboard.Timeline {
	t.Helper()
	waitTurn(t, f, id)
	tl := getJSON[dashboard.Timeline](t, base+"/ui/api/turns/"+id)
	got := lo.Map(tl.Steps, func(s dashboard.Step, _ int) string { return s.Step })
	if !slices.Equal(got, want) {
		t.Errorf("steps %v, want %v", got, want)
	}
	return tl
}

// A turn's timeline is its events in order with the time between each:
// queued, typed, submitted, replied; deferrals and extra Enters are steps.
func TestTurnTimeline(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w-1", "w-local")
	_, base := serve(t, f, nil)
	id := send(f, "w-1", "hello")
	step := func(d events.Data) {
		f.MustAppend(events.Event{Subject: "w-1", CorrelationID: id, Data: d})
	}
	step(events.AgentTyped{Pane: "p1", Method: "agent.prompt", Bytes: 5})
	step(events.AgentDeferred{Reason: "not_ready", Message: "busy"})
	step(events.AgentTyped{Pane: "p1", Method: "agent.prompt", Bytes: 5})
	step(events.AgentTyped{Pane: "p1", Method: "pane.send_keys", Enter: 1})
	step(events.AgentSubmitted{Via: "hook", PromptID: "p-1"})
	step(events.AgentReplied{Reply: "hi", Tokens: events.Tokens{In: 10, Out: 2}, CostUSD: 0.5})
	tl := checkTimeline(t, f, base, id, "queued", "typed", "deferred", "typed", "enter", "submitted", "replied")
	if !tl.FromLog || tl.Turn.Deferrals != 1 || tl.Turn.Enter != 1 || tl.Turn.From != "lead" || tl.TotalMS <= 0 {
		t.Errorf("timeline %+v", tl)
	}
	for i, s := range tl.Steps[1:] {
		if s.SincePrevMS < 0 || !s.At.Equal(tl.Steps[i].At.Add(time.Duration(s.SincePrevMS*float64(time.Millisecond)))) && s.SincePrevMS == 0 {
			t.Errorf("step %d %s: %v since the one before", i+1, s.Step, s.SincePrevMS)
		}
	}
	if status, _ := fleettest.Do(t, http.MethodGet, base+"/ui/api/turns/nope", ""); status != http.StatusNotFound {
		t.Errorf("unknown turn: %d", status)
	}
}

// A role turn cancelled in its role's queue ends its timeline failed,
// saying who cancelled it where.
func TestTurnTimelineOfARoleTurnCancelledInItsQueue(t *testing.T) {
	f := fleettest.New(t)
	_, base := serve(t, f, nil)
	id := f.MustAppend(events.Event{Subject: "w-local", Data: events.RoleQueued{From: "lead", Text: "nobody took it"}}).ID
	f.MustAppend(events.Event{Subject: "w-local", CorrelationID: id, Data: events.RoleCancelled{By: "alice"}})
	tl := checkTimeline(t, f, base, id, "queued", "failed")
	if got := tl.Steps[1].Detail; got != "cancelled: cancelled by alice in role:w-local's queue" {
		t.Errorf("the cancel's step says %q", got)
	}
}

// Costs are what the replied events recorded, summed by agent, role,
// session and job over a window; a reply re-appended under its id counts
// once.
func TestCostSumsWhatTheHooksRecorded(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w-1", "w-local")
	f.Register("w-2", "w-claude")
	_, base := serve(t, f, nil)
	reply := func(agent, job, session string, in, out int64, usd float64) events.Event {
		id := send(f, agent, "x", func(q *events.AgentQueued) { q.Job = job })
		f.MustAppend(events.Event{Subject: agent, CorrelationID: id, Data: events.AgentTyped{Pane: "p", Method: "agent.prompt"}})
		ev := events.Event{Subject: agent, CorrelationID: id, Data: events.AgentReplied{Reply: "ok", SessionID: session,
			Tokens: events.Tokens{In: in, Out: out, CacheRead: 1}, CostUSD: usd}}
		ack := f.MustAppend(ev)
		ev.ID = ack.ID
		waitTurn(t, f, id)
		return ev
	}
	f.MustAppend(events.Event{Subject: "w-1", Data: events.AgentSession{SessionID: "s-1", State: "started"}})
	dup := reply("w-1", "j1", "s-1", 100, 10, 0.25)
	reply("w-1", "", "s-1", 50, 5, 0.125)
	reply("w-2", "j1", "s-2", 10, 1, 1)
	f.MustAppend(dup) // a spool replayed after the dedupe window: same id, new position

	for _, tc := range []struct {
		by   string
		want map[string]float64
	}{
		{"agent", map[string]float64{"w-1": 0.375, "w-2": 1}},
		{"role", map[string]float64{"w-local": 0.375, "w-claude": 1}},
		{"session", map[string]float64{"w-1": 0.375, "w-2": 1}}, // fleetd's session names
		{"job", map[string]float64{"j1": 1.25, "(none)": 0.125}},
	} {
		r := getJSON[dashboard.CostReport](t, base+"/ui/api/cost?since=1h&by="+tc.by)
		got := map[string]float64{}
		for _, row := range r.Rows {
			got[row.Key] = row.CostUSD
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("by %s: %v, want %v", tc.by, got, tc.want)
		}
		if r.Total.Turns != 3 || r.Total.Tokens.In != 160 || r.Total.Tokens.Out != 16 || r.Total.Tokens.CacheRead != 3 || r.Total.CostUSD != 1.375 {
			t.Errorf("by %s: total %+v", tc.by, r.Total)
		}
	}
	if r := getJSON[dashboard.CostReport](t, base+"/ui/api/cost?since="+url.QueryEscape(time.Now().Add(time.Hour).Format(time.RFC3339))); r.Total.Turns != 0 {
		t.Errorf("a window in the future: %+v", r.Total)
	}
	for _, q := range []string{"by=moon", "since=soon", "at=never"} {
		if status, _ := fleettest.Do(t, http.MethodGet, base+"/ui/api/cost?"+q, ""); status != http.StatusBadRequest {
			t.Errorf("cost?%s: %d, want 400", q, status)
		}
	}
}

// frame is one server-sent event.
type frame struct{ event, data string }

// sseReader reads a dashboard stream's frames.
func sseReader(t *testing.T, u string) (<-chan frame, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("GET %s: %s", u, res.Status)
	}
	ch := make(chan frame, 64)
	go func() {
		defer close(ch)
		defer res.Body.Close()
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		var fr frame
		var data []string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if fr.event != "" {
					fr.data = strings.Join(data, "\n")
					ch <- fr
				}
				fr, data = frame{}, nil
			case strings.HasPrefix(line, "event: "):
				fr.event = strings.TrimPrefix(line, "event: ")
			case strings.HasPrefix(line, "data: "):
				data = append(data, strings.TrimPrefix(line, "data: "))
			}
		}
	}()
	return ch, cancel
}

// next waits for the next frame of kind event whose data satisfies ok.
func next(t *testing.T, ch <-chan frame, event string, ok func(string) bool) string {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		select {
		case fr, open := <-ch:
			if !open {
				t.Fatalf("stream ended waiting for %s", event)
			}
			if fr.event == event && ok(fr.data) {
				return fr.data
			}
		case <-timeout:
			t.Fatalf("no %s frame in time", event)
		}
	}
}

// A live view is sent again when what it shows changes; a view of the
// past is sent once, then "end"; the log view sends new rows only.
func TestStreamsKeepViewsLive(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w-1", "w-local")
	_, base := serve(t, f, nil)

	fleet, stop := sseReader(t, base+"/ui/stream?view=fleet")
	defer stop()
	next(t, fleet, "view", func(d string) bool { return strings.Contains(d, `data-state="idle"`) })
	id := send(f, "w-1", "work")
	f.MustAppend(events.Event{Subject: "w-1", CorrelationID: id, Data: events.AgentTyped{Pane: "p", Method: "agent.prompt"}})
	next(t, fleet, "view", func(d string) bool { return strings.Contains(d, `data-state="working"`) && strings.Contains(d, id) })
	f.MustAppend(events.Event{Subject: "w-1", CorrelationID: id, Data: events.AgentFailed{Reason: "cancelled"}})
	next(t, fleet, "view", func(d string) bool { return strings.Contains(d, `data-state="idle"`) })

	logs, stopLog := sseReader(t, base+"/ui/stream?view=log&subject="+url.QueryEscape("fleet.agent.w-1.>"))
	defer stopLog()
	next(t, logs, "view", func(d string) bool { return strings.Contains(d, `id="log-rows"`) })
	f.MustAppend(events.Event{Subject: "w-1", Data: events.AgentAttention{Reason: "prompt_not_empty"}})
	rows := next(t, logs, "rows", func(string) bool { return true })
	if !strings.Contains(rows, "prompt_not_empty") || strings.Contains(rows, `id="log-rows"`) {
		t.Errorf("new rows: %s", rows)
	}

	past, stopPast := sseReader(t, base+"/ui/stream?view=fleet&at="+url.QueryEscape(time.Now().Add(-time.Hour).Format(time.RFC3339)))
	defer stopPast()
	next(t, past, "view", func(d string) bool { return !strings.Contains(d, "agent-w-1") })
	next(t, past, "end", func(string) bool { return true })
}

// Streams are capped; one over the cap is 429, and a slot frees when a
// reader leaves.
func TestStreamsAreCapped(t *testing.T) {
	f := fleettest.New(t)
	d, base := serve(t, f, func(c *dashboard.Config) { c.MaxStreams = 1 })
	ch, stop := sseReader(t, base+"/ui/stream?view=fleet")
	next(t, ch, "view", func(string) bool { return true })
	if status, body := get(t, base+"/ui/stream?view=turns"); status != http.StatusTooManyRequests || !strings.Contains(body, "too_many_streams") {
		t.Errorf("a second stream: %d %s", status, body)
	}
	stop()
	checkfor.Eventually(t, 5*time.Second, 10*time.Millisecond, func() error {
		if n := d.Stats().Streams; n != 0 {
			return fmt.Errorf("%d streams still open", n)
		}
		return nil
	})
	if d.Stats().StreamsRefused != 1 {
		t.Errorf("stats %+v", d.Stats())
	}
}

func TestParseAtReadsEveryWayToNameAPoint(t *testing.T) {
	loc := time.FixedZone("X", 2*3600)
	now := time.Date(2026, 11, 30, 14, 5, 0, 0, loc)
	for _, tc := range []struct {
		in   string
		want dashboard.Point
	}{
		{"", dashboard.Point{}},
		{"live", dashboard.Point{}},
		{"#42", dashboard.Point{Seq: 42}},
		{"10m", dashboard.Point{Time: now.Add(-10 * time.Minute)}},
		{"2d", dashboard.Point{Time: now.Add(-48 * time.Hour)}},
		{"2026-11-30T12:02:10.5Z", dashboard.Point{Time: time.Date(2026, 11, 30, 12, 2, 10, 5e8, time.UTC)}},
		{"2026-11-30T14:02:10.123", dashboard.Point{Time: time.Date(2026, 11, 30, 14, 2, 10, 123e6, loc)}},
		{"2026-11-30T14:02", dashboard.Point{Time: time.Date(2026, 11, 30, 14, 2, 0, 0, loc)}},
		{"14:02:10", dashboard.Point{Time: time.Date(2026, 11, 30, 14, 2, 10, 0, loc)}},
		{"14:06", dashboard.Point{Time: time.Date(2026, 11, 29, 14, 6, 0, 0, loc)}}, // later today: yesterday's
	} {
		got, err := dashboard.ParseAt(tc.in, now)
		if err != nil || got.Seq != tc.want.Seq || !got.Time.Equal(tc.want.Time) {
			t.Errorf("%q: %+v %v, want %+v", tc.in, got, err, tc.want)
		}
		if again, err := dashboard.ParseAt(got.String(), now); err != nil || !again.Time.Equal(got.Time) || again.Seq != got.Seq {
			t.Errorf("%q: String %q reads back as %+v %v", tc.in, got.String(), again, err)
		}
	}
	for _, bad := range []string{"#0", "#x", "-5m", "yesterday", "25:00"} {
		if p, err := dashboard.ParseAt(bad, now); err == nil {
			t.Errorf("%q accepted as %+v", bad, p)
		}
	}
}

// A role turn released from an agent that died shows its whole way: queued
// for the role, assigned, released, back in the role's queue, assigned to
// the next agent, typed there and replied.
func TestTheTimelineOfAReleasedTurn(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w-1", "w")
	f.Register("w-2", "w")
	_, base := serve(t, f, nil)
	id := events.NewULIDSource(time.Now)()
	f.MustAppend(events.Event{ID: id, Subject: "w", CorrelationID: id, Data: events.RoleQueued{From: "lead", Text: "any"}})
	f.MustAppend(events.Event{Subject: "w-1", CorrelationID: id, Data: events.AgentQueued{From: "lead", Text: "any", AssignedFrom: "w"}})
	f.MustAppend(events.Event{Subject: "w-1", CorrelationID: id, Data: events.AgentReleased{Role: "w", Attempt: 1, Reason: events.ReasonAgentDied, Message: "gone"}})
	f.MustAppend(events.Event{Subject: "w", CorrelationID: id, Data: events.RoleQueued{From: "lead", Text: "any", Requeue: 1}})
	f.MustAppend(events.Event{Subject: "w-2", CorrelationID: id, Data: events.AgentQueued{From: "lead", Text: "any", AssignedFrom: "w"}})
	f.MustAppend(events.Event{Subject: "w-2", CorrelationID: id, Data: events.AgentTyped{Pane: "p2", Method: "agent.prompt", Bytes: 3}})
	f.MustAppend(events.Event{Subject: "w-2", CorrelationID: id, Data: events.AgentReplied{Reply: "done"}})
	// No submitted event before the reply: the reply implies it, as the
	// turn's state says.
	tl := checkTimeline(t, f, base, id, "queued", "assigned", "released", "queued", "assigned", "typed", "submitted", "replied")
	if s := tl.Steps[6]; s.Event.ID != "" || !strings.Contains(s.Detail, "implied by the reply") {
		t.Errorf("the implied submitted step: %+v", s)
	}
	if tl.Turn.Releases != 1 || tl.Turn.ReleasedFrom != "w-1" || tl.Turn.Agent != "w-2" {
		t.Errorf("turn %+v", tl.Turn)
	}
}
