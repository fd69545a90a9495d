package projectionstest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/fleetd/fleetd/events"
)

// Config shapes a workload.
type Config struct {
	// Seed makes the workload reproducible.
	Seed uint64
	// Events is how many operations to generate (default 10,000).
	Events int
	// Agents and Hosts size the fleet (defaults 20 and 3).
	Agents int
	Hosts  int
	// Start is the time of the first event (default 2026-11-30 07:00 UTC);
	// each operation advances the clock by 1–200 ms.
	Start time.Time
	// Faults is the share of operations that are faults (duplicates,
	// orphans, junk). Default 0.1; negative means none.
	Faults float64
}

func (c *Config) setDefaults() {
	if c.Events == 0 {
		c.Events = 10_000
	}
	if c.Agents == 0 {
		c.Agents = 20
	}
	if c.Hosts == 0 {
		c.Hosts = 3
	}
	if c.Start.IsZero() {
		c.Start = time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	}
	if c.Faults == 0 {
		c.Faults = 0.1
	}
}

// OpKind is how an operation reaches the stream.
type OpKind int

const (
	// Append appends Event through events.Log (Nats-Msg-Id = its id).
	Append OpKind = iota
	// Republish publishes Event's exact envelope again without a
	// Nats-Msg-Id: the same event id at a new stream position, as a hook
	// spool replayed after the dedupe window would.
	Republish
	// Junk publishes Raw on Subject: not a valid event.
	Junk
)

// Op is one step of a workload.
type Op struct {
	Kind    OpKind
	Event   events.Event
	Subject string
	Raw     []byte
}

// Workload is a generated sequence of operations and its end time.
type Workload struct {
	Ops []Op
	// End is the time of the last event: a fixed "now" for liveness.
	End time.Time
}

type agentSim struct {
	id, host, role, session string
	queue                   []string
	inFlight                string
	submitted               bool
	prompt                  string
	exited                  bool
}

type gen struct {
	cfg     Config
	rng     *rand.Rand
	now     time.Time
	entropy *ulid.MonotonicEntropy
	ops     []Op
	agents  []*agentSim
	hosts   []string
	roles   map[string][]string // role → unassigned turn ids
	texts   map[string]string
	turnN   int
}

// Generate builds a workload from cfg. The same cfg yields the same ops.
func Generate(cfg Config) Workload {
	cfg.setDefaults()
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	g := &gen{cfg: cfg, rng: rng, now: cfg.Start, roles: map[string][]string{}, texts: map[string]string{},
		entropy: ulid.Monotonic(rngReader{rng}, 0)}
	for i := range cfg.Hosts {
		h := fmt.Sprintf("host-%d", i+1)
		g.hosts = append(g.hosts, h)
		g.append(h, "", events.HostUp{Host: h, Version: "dev", PID: 100 + i})
	}
	roleNames := []string{"w-claude", "w-local", "main"}
	for i := range cfg.Agents {
		a := &agentSim{id: fmt.Sprintf("a-%02d", i), host: g.hosts[i%len(g.hosts)], role: roleNames[i%len(roleNames)]}
		if i%3 == 0 {
			a.session = "sess-" + a.id
		}
		g.agents = append(g.agents, a)
		g.register(a)
	}
	for len(g.ops) < cfg.Events {
		g.step()
	}
	g.ops = g.ops[:cfg.Events]
	return Workload{Ops: g.ops, End: g.now}
}

type rngReader struct{ r *rand.Rand }

func (r rngReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r.r.Uint32())
	}
	return len(p), nil
}

func (g *gen) id() string {
	return ulid.MustNew(ulid.Timestamp(g.now), g.entropy).String()
}

func (g *gen) tick() {
	g.now = g.now.Add(time.Duration(1+g.rng.IntN(200)) * time.Millisecond)
}

// append adds an Append op; for a queued event the event id is the turn id.
func (g *gen) append(subject, corr string, d events.Data) events.Event {
	g.tick()
	ev := events.Event{ID: g.id(), Source: "fleetd/gen/test", Subject: subject, Time: g.now, CorrelationID: corr, Data: d}
	g.ops = append(g.ops, Op{Kind: Append, Event: ev})
	return ev
}

func (g *gen) register(a *agentSim) {
	a.exited = false
	g.append(a.id, "", events.AgentRegistered{Agent: a.id, Host: a.host, Pane: "p-" + a.id, Role: a.role,
		Tier: 1 + len(a.id)%2, Parent: "lead", Model: "claude-test", Cwd: "/src/" + a.id, Session: a.session, Origin: "spawned"})
	g.status(a, events.StatusIdle, "herdr")
}

func (g *gen) status(a *agentSim, s events.Status, source string) {
	g.append(a.id, "", events.AgentStatusChanged{Status: s, Source: source, StateChangeSeq: uint64(len(g.ops))})
}

func (g *gen) pick() *agentSim { return g.agents[g.rng.IntN(len(g.agents))] }

func (g *gen) step() {
	if g.rng.Float64() < g.cfg.Faults {
		g.fault()
		return
	}
	a := g.pick()
	switch r := g.rng.IntN(100); {
	case r < 5:
		g.append(a.host, "", events.HostUp{Host: a.host, Heartbeat: true})
	case r < 6:
		g.append(a.host, "", events.HostDown{Host: a.host, Reason: "shutdown"})
	case r < 16:
		st := []events.Status{events.StatusIdle, events.StatusWorking, events.StatusBlocked, events.StatusDone}[g.rng.IntN(4)]
		g.status(a, st, []string{"herdr", "hook"}[g.rng.IntN(2)])
	case r < 30:
		if a.exited {
			g.register(a)
			return
		}
		g.turnN++
		text := fmt.Sprintf("task %d for %s", g.turnN, a.id)
		g.tick()
		ev := events.Event{ID: g.id(), Source: "fleetd/gen/shim", Subject: a.id, Time: g.now, Data: events.AgentQueued{From: "lead", Text: text}}
		ev.CorrelationID = ev.ID
		g.ops = append(g.ops, Op{Kind: Append, Event: ev})
		a.queue = append(a.queue, ev.ID)
		g.texts[ev.ID] = text
	case r < 36:
		g.turnN++
		text := fmt.Sprintf("role task %d", g.turnN)
		g.tick()
		ev := events.Event{ID: g.id(), Source: "fleetd/gen/shim", Subject: a.role, Time: g.now, Data: events.RoleQueued{From: "lead", Text: text}}
		ev.CorrelationID = ev.ID
		g.ops = append(g.ops, Op{Kind: Append, Event: ev})
		g.roles[a.role] = append(g.roles[a.role], ev.ID)
		g.texts[ev.ID] = text
	case r < 42:
		q := g.roles[a.role]
		if len(q) == 0 || a.exited {
			return
		}
		id := q[0]
		g.roles[a.role] = q[1:]
		g.append(a.id, id, events.AgentQueued{From: "lead", Text: g.texts[id], AssignedFrom: a.role})
		a.queue = append(a.queue, id)
	case r < 80:
		g.advance(a)
	case r < 84:
		state := []string{"started", "ended"}[g.rng.IntN(2)]
		name := ""
		if g.rng.IntN(4) == 0 {
			name = "named-" + a.id
		}
		g.append(a.id, "", events.AgentSession{SessionID: fmt.Sprintf("cs-%s-%d", a.id, g.rng.IntN(3)), State: state,
			TranscriptPath: "/t/" + a.id + ".jsonl", Model: "claude-test", Name: name})
	case r < 86:
		if len(a.queue) > 0 {
			id := a.queue[g.rng.IntN(len(a.queue))]
			g.append(a.id, id, events.AgentFailed{Reason: events.ReasonCancelled})
			a.queue = remove(a.queue, id)
		}
	case r < 88:
		if a.exited {
			g.register(a)
			return
		}
		a.exited = true
		g.append(a.id, "", events.AgentExited{Pane: "p-" + a.id, Reason: "pane_exited"})
		if a.inFlight != "" {
			g.append(a.id, a.inFlight, events.AgentFailed{Reason: events.ReasonPaneExited})
			a.inFlight, a.submitted = "", false
		}
	default:
		if a.exited {
			g.register(a)
		}
	}
}

// advance moves an agent's turn one step: type, submit, reply or fail.
func (g *gen) advance(a *agentSim) {
	switch {
	case a.exited:
	case a.inFlight == "" && len(a.queue) > 0:
		id := a.queue[0]
		a.queue, a.inFlight, a.submitted = a.queue[1:], id, false
		g.append(a.id, id, events.AgentTyped{Pane: "p-" + a.id, Method: "agent.prompt", Bytes: len(g.texts[id])})
	case a.inFlight != "" && !a.submitted:
		a.submitted = true
		a.prompt = fmt.Sprintf("pr-%d", g.rng.IntN(1_000_000))
		g.append(a.id, g.hookCorr(a), events.AgentSubmitted{Via: "hook", PromptID: a.prompt, SessionID: "cs-" + a.id, Prompt: g.texts[a.inFlight]})
		g.status(a, events.StatusWorking, "hook")
	case a.inFlight != "":
		if g.rng.IntN(10) == 0 {
			g.append(a.id, g.hookCorr(a), events.AgentFailed{Reason: "agent_error"})
		} else {
			g.append(a.id, g.hookCorr(a), events.AgentReplied{Reply: "done: " + g.texts[a.inFlight], PromptID: a.prompt,
				SessionID: "cs-" + a.id, Model: "claude-test",
				Tokens:  events.Tokens{In: int64(10 + g.rng.IntN(5000)), Out: int64(1 + g.rng.IntN(800)), CacheRead: int64(g.rng.IntN(100))},
				CostUSD: float64(g.rng.IntN(10_000)) / 1e5})
		}
		g.status(a, events.StatusIdle, "hook")
		a.inFlight, a.submitted = "", false
	}
}

// hookCorr is the correlation id a hook would send: usually the turn in
// flight, sometimes none (KV not read in time).
func (g *gen) hookCorr(a *agentSim) string {
	if g.rng.IntN(4) == 0 {
		return ""
	}
	return a.inFlight
}

// fault adds one of the things a fold must shrug off.
func (g *gen) fault() {
	switch r := g.rng.IntN(6); {
	case r == 0 && len(g.ops) > 0:
		// The same event re-published at a new position (spool replay).
		prev := g.recent()
		if prev.Kind != Junk {
			g.ops = append(g.ops, Op{Kind: Republish, Event: prev.Event})
		}
	case r == 1 && len(g.ops) > 0:
		// The same content appended again under a fresh id.
		prev := g.recent()
		if prev.Kind != Junk {
			ev := prev.Event
			g.tick()
			ev.ID = g.id()
			g.ops = append(g.ops, Op{Kind: Append, Event: ev})
		}
	case r == 2:
		// A status or reply from an agent nobody registered.
		ghost := fmt.Sprintf("ghost-%d", g.rng.IntN(3))
		g.append(ghost, "", events.AgentStatusChanged{Status: events.StatusWorking, Source: "hook"})
		g.append(ghost, "", events.AgentReplied{Reply: "?", Tokens: events.Tokens{In: 1, Out: 1}})
	case r == 3:
		// Turn events for turns that do not exist or are not in flight.
		a := g.pick()
		g.append(a.id, "01ARZ3NDEKTSV4RRFFQ69G5FAV", events.AgentTyped{Pane: "p-" + a.id, Method: "agent.prompt"})
		if a.inFlight == "" {
			g.append(a.id, "", events.AgentReplied{Reply: "typed by hand", Tokens: events.Tokens{In: 5, Out: 5}})
		}
	case r == 4:
		g.ops = append(g.ops, Op{Kind: Junk, Subject: "fleet.agent." + g.pick().id + ".status", Raw: []byte(`{"specversion":"1.0","id":"nope"`)})
	default:
		g.ops = append(g.ops, Op{Kind: Junk, Subject: "fleet.agent." + g.pick().id + ".replied", Raw: []byte("\x00garbage")})
	}
}

// recent picks one of the last 50 operations.
func (g *gen) recent() Op {
	n := min(50, len(g.ops))
	return g.ops[len(g.ops)-1-g.rng.IntN(n)]
}

func remove(ids []string, id string) []string {
	out := ids[:0]
	for _, x := range ids {
		if x != id {
			out = append(out, x)
		}
	}
	return out
}

// Play performs ops against the stream in order and returns the stream
// sequence of the last valid event it stored (what WaitSeq should wait
// for).
func Play(ctx context.Context, log events.Log, js jetstream.JetStream, ops []Op) (uint64, error) {
	var last uint64
	for i, op := range ops {
		switch op.Kind {
		case Append:
			ack, err := log.Append(ctx, op.Event)
			if err != nil {
				return last, fmt.Errorf("op %d: %w", i, err)
			}
			if !ack.Duplicate {
				last = ack.Seq
			}
		case Republish:
			subj, err := op.Event.StreamSubject()
			if err != nil {
				return last, fmt.Errorf("op %d: %w", i, err)
			}
			body, err := json.Marshal(op.Event)
			if err != nil {
				return last, fmt.Errorf("op %d: %w", i, err)
			}
			ack, err := js.Publish(ctx, subj, body)
			if err != nil {
				return last, fmt.Errorf("op %d: %w", i, err)
			}
			last = ack.Sequence
		case Junk:
			if _, err := js.Publish(ctx, op.Subject, op.Raw); err != nil {
				return last, fmt.Errorf("op %d: %w", i, err)
			}
		}
	}
	return last, nil
}
