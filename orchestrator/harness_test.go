package orchestrator_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/orchestrator"
	"github.com/fleetd/fleetd/projections"
)

// fleet is one test's fabric: real embedded NATS, the event log, the
// projection's fold of it in memory (as `fleetd orchestrate` runs it), a
// fake spawner and the agent-playing driver.
type fleet struct {
	t       *testing.T
	ctx     context.Context
	log     events.Log
	views   projections.Projector
	spawner *fakeSpawner
	driver  *driver
}

func newFleet(t *testing.T, react reactFunc) *fleet {
	t.Helper()
	srv, log := fleettest.StartLog(t, events.Options{Source: "fleetd/test/orchestrator"})
	ctx, cancel := context.WithCancel(context.Background())
	f := &fleet{t: t, ctx: ctx, log: log, views: projections.New(log, srv.JS, projections.Options{Memory: true})}
	f.spawner = &fakeSpawner{log: log}
	f.driver = &driver{t: t, log: log, react: react, book: lifecycle.NewBook(), playing: map[string]string{},
		roles: map[string]string{}, sids: map[string]string{}, exited: map[string]bool{}}
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := f.views.Run(ctx); err != nil {
			t.Errorf("views: %v", err)
		}
	}()
	select {
	case <-f.views.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("views not ready after 30s")
	}
	go func() {
		defer wg.Done()
		f.driver.run(ctx)
	}()
	return f
}

func (f *fleet) sessions(cfg orchestrator.SessionConfig) *orchestrator.Sessions {
	f.t.Helper()
	cfg.Log, cfg.Views, cfg.Spawner = f.log, f.views, f.spawner
	s, err := orchestrator.NewSessions(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

func (f *fleet) orchestrator(cfg orchestrator.Config) *orchestrator.Orchestrator {
	f.t.Helper()
	cfg.Log, cfg.Views = f.log, f.views
	o, err := orchestrator.New(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	return o
}

// all reads the whole log now.
func (f *fleet) all(subjects ...string) []events.Event {
	return eventstest.ReadAll(f.t, f.log, events.Query{Subjects: subjects})
}

// queuedByTask counts AgentQueued events per job/task.
func (f *fleet) queuedByTask(job string) map[string]int {
	n := map[string]int{}
	for _, ev := range f.all("fleet.agent.*.queued") {
		if q := ev.Data.(events.AgentQueued); q.Job == job {
			n[q.Task]++
		}
	}
	return n
}

// fakeSpawner plays herdrbridge's spawn: it records what it was asked and
// appends what a real pane would produce — registered (origin spawned),
// the SessionStart hook's session event (the resumed id, or a new one) and
// idle status; Close appends exited.
type fakeSpawner struct {
	log events.Log

	mu     sync.Mutex
	spawns []orchestrator.SpawnSpec
	closes []string
	n      int
}

func (s *fakeSpawner) Spawn(ctx context.Context, spec orchestrator.SpawnSpec) error {
	s.mu.Lock()
	s.spawns = append(s.spawns, spec)
	s.n++
	sid := spec.Resume
	if sid == "" {
		// Claude Code's shape (a UUID): a named session resumes no other.
		sid = fmt.Sprintf("00000000-0000-4000-8000-%012d", s.n)
	}
	s.mu.Unlock()
	for _, d := range []events.Data{
		events.AgentRegistered{Agent: spec.Agent, Host: "test", Pane: "p-" + spec.Agent, Role: spec.Role, Tier: spec.Tier,
			Parent: spec.Parent, Model: spec.Model, Cwd: spec.Cwd, Session: spec.Session, Origin: "spawned"},
		events.AgentSession{SessionID: sid, State: "started", Name: spec.Session},
		events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"},
	} {
		if _, err := s.log.Append(ctx, events.Event{Subject: spec.Agent, Data: d}); err != nil {
			return err
		}
	}
	return nil
}

func (s *fakeSpawner) Close(ctx context.Context, agent string) error {
	s.mu.Lock()
	s.closes = append(s.closes, agent)
	s.mu.Unlock()
	_, err := s.log.Append(ctx, events.Event{Subject: agent, Data: events.AgentExited{Pane: "p-" + agent, Reason: "closed"}})
	return err
}

func (s *fakeSpawner) recorded() ([]orchestrator.SpawnSpec, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.spawns), slices.Clone(s.closes)
}

// reactFunc computes an agent's reply to a turn; it may block (a main
// running a sub-plan) and must return when ctx ends.
type reactFunc func(ctx context.Context, agent, role string, t lifecycle.Turn) string

// driver plays every agent of the fleet: it follows the log and, for each
// turn queued on an agent with nothing in flight, appends typed →
// submitted → replied like a gateway and the pane's hooks would, one turn
// per agent at a time, agents concurrently.
type driver struct {
	t     *testing.T
	log   events.Log
	react reactFunc

	mu      sync.Mutex
	book    *lifecycle.Book
	playing map[string]string // agent → turn being played
	roles   map[string]string
	sids    map[string]string // agent → Claude session id
	exited  map[string]bool
	wg      sync.WaitGroup
}

func (d *driver) run(ctx context.Context) {
	defer d.wg.Wait()
	f, err := d.log.Follow(ctx, events.Query{Subjects: []string{"fleet.agent.>"}})
	if err != nil {
		if ctx.Err() == nil {
			d.t.Errorf("driver: %v", err)
		}
		return
	}
	defer f.Stop()
	for ev := range f.Events() {
		d.mu.Lock()
		switch x := ev.Data.(type) {
		case events.AgentRegistered:
			d.roles[ev.Subject] = x.Role
			delete(d.exited, ev.Subject)
		case events.AgentSession:
			d.sids[ev.Subject] = x.SessionID
		case events.AgentExited:
			d.exited[ev.Subject] = true
		}
		if t, ok := d.book.Apply(ev); ok && t.State.Final() && d.playing[t.Agent] == t.ID {
			delete(d.playing, t.Agent)
		}
		agent := ev.Subject
		if d.playing[agent] == "" && !d.exited[agent] {
			if next, ok := d.book.Next(agent); ok {
				d.playing[agent] = next.ID
				d.wg.Add(1)
				go d.play(ctx, agent, d.roles[agent], d.sids[agent], next)
			}
		}
		d.mu.Unlock()
	}
}

func (d *driver) play(ctx context.Context, agent, role, sid string, t lifecycle.Turn) {
	defer d.wg.Done()
	emit := func(data events.Data) bool {
		_, err := d.log.Append(ctx, events.Event{Subject: agent, CorrelationID: t.ID, Data: data})
		if err != nil && ctx.Err() == nil {
			d.t.Errorf("driver %s: %v", agent, err)
		}
		return err == nil
	}
	if !emit(events.AgentTyped{Pane: "p-" + agent, Method: "agent.prompt", Bytes: len(t.Text)}) ||
		!emit(events.AgentSubmitted{Via: "hook", SessionID: sid, Prompt: t.Text}) ||
		!emit(events.AgentStatusChanged{Status: events.StatusWorking, Source: "hook"}) {
		return
	}
	reply := d.react(ctx, agent, role, t)
	if ctx.Err() != nil {
		return
	}
	tokens := events.Tokens{In: int64(len(t.Text)), Out: int64(len(reply))}
	if emit(events.AgentReplied{Reply: reply, SessionID: sid, Model: "fake", Tokens: tokens}) {
		emit(events.AgentStatusChanged{Status: events.StatusIdle, Source: "hook"})
	}
}

// block is one <context> block of a prompt.
type block struct {
	Key, Tags, Text string
}

var blockRE = regexp.MustCompile(`(?s)<context key="([^"]*)"(?: tags="([^"]*)")?(?: from="[^"]*")?>\n(.*?)\n</context>`)

// parsePrompt splits a prompt into its instructions and its context blocks.
func parsePrompt(prompt string) (string, []block) {
	var blocks []block
	for _, m := range blockRE.FindAllStringSubmatch(prompt, -1) {
		blocks = append(blocks, block{Key: m[1], Tags: m[2], Text: m[3]})
	}
	instr := prompt
	if i := strings.Index(prompt, "\n\n<context "); i >= 0 {
		instr = prompt[:i]
	}
	return instr, blocks
}

func keysOf(bs []block) []string {
	out := []string{}
	for _, b := range bs {
		out = append(out, b.Key)
	}
	return out
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// worker replies "done: <first line>".
func worker(_ context.Context, _, _ string, t lifecycle.Turn) string {
	return "done: " + firstLine(t.Text)
}
