package projections_test

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
)

var u0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// usageLog registers w-1 of role w and records three replies: two in the
// first quarter hour, one three hours later.
func usageLog(t *testing.T, e *env) {
	t.Helper()
	e.append(t, events.Event{Subject: "w-1", Time: u0, Data: events.AgentRegistered{Agent: "w-1", Host: "h", Role: "w"}})
	reply := func(at time.Time, tok events.Tokens, usd float64) {
		e.append(t, events.Event{Subject: "w-1", Time: at, Data: events.AgentReplied{Reply: "ok", Tokens: tok, CostUSD: usd}})
	}
	// Cache reads are not counted: 100+50+10 tokens.
	reply(u0.Add(time.Minute), events.Tokens{In: 100, Out: 50, CacheCreation: 10, CacheRead: 5000}, 0.5)
	reply(u0.Add(11*time.Minute), events.Tokens{In: 200}, 1)
}

func TestUsageIsFoldedIntoRollingWindowsPerAgentAndRole(t *testing.T) {
	e := newEnv(t)
	usageLog(t, e)
	p := start(t, projections.New(e.log, nil, projections.Options{Memory: true}))
	last := e.append(t, events.Event{Subject: "w-2", Time: u0, Data: events.AgentRegistered{Agent: "w-2", Host: "h", Role: "other"}})
	waitSeq(t, p, last.Seq)

	now := u0.Add(20 * time.Minute)
	for _, who := range []struct{ kind, id string }{{projections.KindAgent, "w-1"}, {projections.KindRole, "w"}} {
		u := p.Usage(who.kind, who.id)
		if got, want := u.In(time.Hour, now), (projections.Spend{Tokens: 360, USD: 1.5}); got != want {
			t.Errorf("%s %s: hour usage %+v, want %+v", who.kind, who.id, got, want)
		}
		if got, want := u.In(24*time.Hour, now), (projections.Spend{Tokens: 360, USD: 1.5}); got != want {
			t.Errorf("%s %s: day usage %+v, want %+v", who.kind, who.id, got, want)
		}
		// Under 1.2 USD once the 10:00 bucket leaves the hour (at 11:05);
		// under 1 USD only once the 10:10 one does too (11:15).
		if got, want := u.FreesAt(time.Hour, now, 1.2, true), u0.Add(65*time.Minute); !got.Equal(want) {
			t.Errorf("%s %s: under 1.2 USD at %v, want %v", who.kind, who.id, got, want)
		}
		if got, want := u.FreesAt(time.Hour, now, 1, true), u0.Add(75*time.Minute); !got.Equal(want) {
			t.Errorf("%s %s: under 1 USD at %v, want %v", who.kind, who.id, got, want)
		}
		if got := u.FreesAt(time.Hour, now, 400, false); !got.Equal(now) {
			t.Errorf("%s %s: already under 400 tokens, but frees at %v", who.kind, who.id, got)
		}
		// After the window the hour is empty again; the day still counts.
		later := u0.Add(76 * time.Minute)
		if got := u.In(time.Hour, later); got != (projections.Spend{}) {
			t.Errorf("%s %s: hour usage at %v is %+v, want none", who.kind, who.id, later, got)
		}
		if got := u.In(24*time.Hour, later).USD; got != 1.5 {
			t.Errorf("%s %s: day usage at %v is %v USD, want 1.5", who.kind, who.id, later, got)
		}
	}
	if u := p.Usage(projections.KindRole, "other"); !reflect.DeepEqual(u, projections.Usage{}) {
		t.Errorf("a role without replies has usage %+v", u)
	}
}

func TestUsageKeepsOnlyTheBucketsAWindowCanReach(t *testing.T) {
	e := newEnv(t)
	e.append(t, events.Event{Subject: "w-1", Time: u0, Data: events.AgentRegistered{Agent: "w-1", Host: "h", Role: "w"}})
	// A reply every 5 minutes for two days: 576 replies.
	var last events.Ack
	for i := range 576 {
		last = e.append(t, events.Event{Subject: "w-1", Time: u0.Add(time.Duration(i) * 5 * time.Minute), Data: events.AgentReplied{Reply: "ok", Tokens: events.Tokens{Out: 1}, CostUSD: 0.01}})
	}
	p := start(t, projections.New(e.log, nil, projections.Options{Memory: true}))
	waitSeq(t, p, last.Seq)
	u := p.Usage(projections.KindAgent, "w-1")
	if len(u.Fine) > 13 || len(u.Coarse) > 25 {
		t.Errorf("%d fine and %d coarse buckets kept; an hour needs at most 13, a day 25", len(u.Fine), len(u.Coarse))
	}
	now := u0.Add(575 * 5 * time.Minute)
	if got, want := u.In(time.Hour, now).Tokens, int64(13); got != want {
		t.Errorf("hour usage %d tokens, want %d (12 steps and the one it overlaps)", got, want)
	}
}

func TestBudgetWarningsAreFoldedPerLimitAndThreshold(t *testing.T) {
	e := newEnv(t)
	usageLog(t, e)
	e.append(t, events.Event{Subject: "w-1", Time: u0.Add(12 * time.Minute), Data: events.AgentBudgetWarning{BudgetWarning: events.BudgetWarning{Limit: "usd_per_hour", Scope: "agent", Percent: 80}}})
	last := e.append(t, events.Event{Subject: "w", Time: u0.Add(13 * time.Minute), Data: events.RoleBudgetWarning{BudgetWarning: events.BudgetWarning{Limit: "usd_per_day", Scope: "role", Percent: 100}}})
	p := start(t, projections.New(e.log, nil, projections.Options{Memory: true}))
	waitSeq(t, p, last.Seq)
	if got := p.Usage(projections.KindAgent, "w-1").Warned; !got[projections.WarningKey("usd_per_hour", 80)].Equal(u0.Add(12*time.Minute)) || len(got) != 1 {
		t.Errorf("agent warnings %v", got)
	}
	if got := p.Usage(projections.KindRole, "w").Warned; !got[projections.WarningKey("usd_per_day", 100)].Equal(u0.Add(13*time.Minute)) || len(got) != 1 {
		t.Errorf("role warnings %v", got)
	}
}

// A restart resumes from the checkpoint with the same usage, roles
// included, and a rebuild from the log finds the same again.
func TestUsageSurvivesACheckpointAndARebuild(t *testing.T) {
	e := newEnv(t)
	usageLog(t, e)
	last := e.append(t, events.Event{Subject: "w", Time: u0.Add(13 * time.Minute), Data: events.RoleBudgetWarning{BudgetWarning: events.BudgetWarning{Limit: "usd_per_day", Scope: "role", Percent: 80}}})
	first := start(t, projections.New(e.log, e.js, projections.Options{}))
	waitSeq(t, first, last.Seq)
	want := map[string]projections.Usage{"w-1": first.Usage(projections.KindAgent, "w-1"), "w": first.Usage(projections.KindRole, "w")}
	if want["w"].In(time.Hour, u0.Add(20*time.Minute)).USD != 1.5 {
		t.Fatalf("role usage before the restart: %+v", want["w"])
	}
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	// The log holds events the checkpoint covers only: a restart that
	// re-read them would count them twice.
	again := start(t, projections.New(e.log, e.js, projections.Options{}))
	check := func(name string, v projections.Views) {
		t.Helper()
		for id, kind := range map[string]string{"w-1": projections.KindAgent, "w": projections.KindRole} {
			if got := v.Usage(kind, id); !reflect.DeepEqual(normalize(got), normalize(want[id])) {
				t.Errorf("%s: %s usage %+v, want %+v", name, id, got, want[id])
			}
		}
	}
	check("restarted", again)
	if err := again.stop(); err != nil {
		t.Fatal(err)
	}
	rebuilt := projections.New(e.log, e.js, projections.Options{})
	if err := rebuilt.Rebuild(t.Context()); err != nil {
		t.Fatal(err)
	}
	check("rebuilt", rebuilt)
}

// A reply appended before its usage could be read (usage pending) ends
// the turn at once; the usage event that follows gives that turn, its
// agent, session and budget windows the tokens and cost, counted once,
// and the turn's view (memory and KV) says usage is no longer pending. A
// usage event of no known prompt counts for the agent but no turn.
func TestAUsageEventCompletesTheReplyThatCameBeforeIt(t *testing.T) {
	e := newEnv(t)
	p := start(t, projections.New(e.log, e.js, projections.Options{Now: fixedNow, FlushInterval: 10 * time.Millisecond}))
	turn := events.NewULIDSource(time.Now)()
	e.append(t, events.Event{Subject: "w-1", Time: u0, Data: events.AgentRegistered{Agent: "w-1", Host: "h", Role: "w"}})
	e.append(t, queued("w-1", turn, "count"))
	e.append(t, events.Event{Subject: "w-1", CorrelationID: turn, Time: u0.Add(time.Second), Data: events.AgentTyped{Pane: "p1", Method: "agent.prompt"}})
	e.append(t, events.Event{Subject: "w-1", Time: u0.Add(2 * time.Second), Data: events.AgentSubmitted{Via: "hook", PromptID: "p1"}})
	ack := e.append(t, events.Event{Subject: "w-1", Time: u0.Add(3 * time.Second), Data: events.AgentReplied{Reply: "done", PromptID: "p1", UsagePending: true}})
	waitSeq(t, p, ack.Seq)
	if tu, ok, err := p.Turn(t.Context(), turn); err != nil || !ok || tu.State != lifecycle.StateReplied || !tu.UsagePending || tu.Tokens != (events.Tokens{}) {
		t.Fatalf("after the reply: %+v %v %v, want replied, usage pending", tu, ok, err)
	}
	tok := events.Tokens{In: 120, Out: 7, CacheCreation: 3}
	e.append(t, events.Event{Subject: "w-1", Time: u0.Add(3100 * time.Millisecond), Data: events.AgentUsage{PromptID: "p1", Model: "m1", Tokens: tok, CostUSD: 0.25}})
	ack = e.append(t, events.Event{Subject: "w-1", Time: u0.Add(4 * time.Second), Data: events.AgentUsage{PromptID: "nobody", Tokens: events.Tokens{In: 1}}})
	waitSeq(t, p, ack.Seq)

	tu, ok, err := p.Turn(t.Context(), turn)
	if err != nil || !ok || tu.UsagePending || tu.Tokens != tok || tu.CostUSD != 0.25 || tu.Model != "m1" || tu.State != lifecycle.StateReplied {
		t.Errorf("after its usage: %+v %v %v, want its tokens and cost, usage not pending", tu, ok, err)
	}
	if a, _ := p.Agent("w-1"); a.Tokens != (events.Tokens{In: 121, Out: 7, CacheCreation: 3}) || a.CostUSD != 0.25 {
		t.Errorf("agent tokens %+v cost %v, want both usages counted once", a.Tokens, a.CostUSD)
	}
	if got, want := p.Usage(projections.KindRole, "w").In(time.Hour, u0.Add(time.Minute)), (projections.Spend{Tokens: 131, USD: 0.25}); got != want {
		t.Errorf("role usage %+v, want %+v", got, want)
	}
	checkfor.Eventually(t, 5*time.Second, 10*time.Millisecond, func() error {
		kt, err := kvGet[lifecycle.Turn](e.js, projections.BucketTurns, turn)
		if err != nil || kt.UsagePending || kt.Tokens != tok {
			return fmt.Errorf("kv turn %+v %v", kt, err)
		}
		return nil
	})
}
