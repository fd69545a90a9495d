package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/events"
)

// Fleet is a simulated fleet: hosts with agents that exist only as events
// (registered, status), no panes.
type Fleet struct {
	Hosts  []string
	Agents []string
	// HostOf is each agent's host, by index into Agents.
	HostOf []string
}

// NewFleet names agents a-0000… spread round-robin over hosts h-00….
func NewFleet(hosts, agents int) Fleet {
	f := Fleet{}
	for i := range hosts {
		f.Hosts = append(f.Hosts, fmt.Sprintf("h-%02d", i))
	}
	for i := range agents {
		f.Agents = append(f.Agents, fmt.Sprintf("a-%04d", i))
		f.HostOf = append(f.HostOf, f.Hosts[i%hosts])
	}
	return f
}

// Announce is every host up, every agent registered on its host and idle
// (as the herdr watcher reports it): what a fleet of that size has put in
// the log by the time it serves.
func (f Fleet) Announce() []events.Event {
	var evs []events.Event
	for _, h := range f.Hosts {
		evs = append(evs, events.Event{Subject: h, Data: events.HostUp{Host: h, Version: "bench"}})
	}
	for i, a := range f.Agents {
		pane := fmt.Sprintf("p%d", i)
		evs = append(evs,
			events.Event{Subject: a, Data: events.AgentRegistered{Agent: a, Host: f.HostOf[i], Pane: pane, Role: "w-bench",
				Tier: 2, Parent: "lead", Model: "claude-sim", Cwd: "/work", Origin: "spawned", EnvClass: "clean"}},
			events.Event{Subject: a, Data: events.AgentStatusChanged{Status: events.StatusIdle, Source: "herdr", Pane: pane, StateChangeSeq: 1}})
	}
	return evs
}

// Turn is the four log events of one finished turn, as the shim (queued),
// the bridge (typed) and the agent's hooks (submitted, replied) append
// them, all carrying correlationid = the turn id (= the queued event id).
func Turn(agent, turnID string, n int) []events.Event {
	prompt := fmt.Sprintf("task %d: summarise the module", n)
	promptID := fmt.Sprintf("prompt-%d", n)
	at := func(d events.Data) events.Event {
		return events.Event{Subject: agent, CorrelationID: turnID, Data: d}
	}
	q := at(events.AgentQueued{From: "lead", Text: prompt})
	q.ID = turnID
	return []events.Event{
		q,
		at(events.AgentTyped{Pane: "p", Method: "agent.prompt", Bytes: len(prompt)}),
		at(events.AgentSubmitted{Via: "hook", PromptID: promptID, SessionID: "s-" + agent, Prompt: prompt}),
		at(events.AgentReplied{Reply: "SIM: " + prompt, PromptID: promptID, SessionID: "s-" + agent, Model: "claude-sim",
			Tokens: events.Tokens{In: 40, Out: 40}, CostUSD: 0.0007}),
	}
}

// EventsPerSyntheticTurn is len(Turn(…)).
const EventsPerSyntheticTurn = 4

// Publish appends evs encoded exactly as events.Log encodes them, but
// pipelined (asynchronous publishes, acks checked per chunk), to fill a
// log fast. It returns the last sequence.
func Publish(ctx context.Context, js jetstream.JetStream, evs []events.Event) (uint64, error) {
	newID := events.NewULIDSource(time.Now)
	var last uint64
	const chunk = 1000
	for len(evs) > 0 {
		n := min(len(evs), chunk)
		futures := make([]jetstream.PubAckFuture, 0, n)
		for i := range evs[:n] {
			ev := &evs[i]
			if ev.ID == "" {
				ev.ID = newID()
			}
			if ev.Time.IsZero() {
				ev.Time = time.Now()
			}
			if ev.Source == "" {
				ev.Source = "fleetd/bench/driver"
			}
			subj, err := ev.StreamSubject()
			if err != nil {
				return last, err
			}
			body, err := json.Marshal(*ev)
			if err != nil {
				return last, err
			}
			m := nats.NewMsg(subj)
			m.Data = body
			m.Header.Set(jetstream.MsgIDHeader, ev.ID)
			f, err := js.PublishMsgAsync(m)
			if err != nil {
				return last, fmt.Errorf("publish: %w", err)
			}
			futures = append(futures, f)
		}
		for _, f := range futures {
			select {
			case ack := <-f.Ok():
				last = max(last, ack.Sequence)
			case err := <-f.Err():
				return last, fmt.Errorf("publish: %w", err)
			case <-ctx.Done():
				return last, ctx.Err()
			}
		}
		evs = evs[n:]
	}
	return last, nil
}

// DriveTurns publishes turns finished turns round-robin over the fleet's
// agents (each agent's turns in order, one in flight at a time), numbered
// from first, and returns the last sequence. newID makes turn ids.
func DriveTurns(ctx context.Context, js jetstream.JetStream, f Fleet, first, turns int, newID func() string) (uint64, error) {
	var last uint64
	batch := make([]events.Event, 0, 4096)
	for i := first; i < first+turns; i++ {
		batch = append(batch, Turn(f.Agents[i%len(f.Agents)], newID(), i)...)
		if len(batch)+EventsPerSyntheticTurn > cap(batch) || i == first+turns-1 {
			seq, err := Publish(ctx, js, batch)
			if err != nil {
				return last, fmt.Errorf("drive turns: %w", err)
			}
			last = seq
			batch = batch[:0]
		}
	}
	return last, nil
}
