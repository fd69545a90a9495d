package herdrbridge_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi/herdrapitest"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/roles"
)

const testHost = "h1"

// fleet is one host's worth of test fabric: a fake herdr with real PTYs
// (schema-checked both ways), an embedded NATS with the FLEET stream, and
// the bridges started on them.
type fleet struct {
	t      *testing.T
	herdr  *herdrtest.Server
	client *herdrapi.Client
	log    events.Log
	newID  func() string
}

func newFleet(t *testing.T) *fleet {
	t.Helper()
	srv, c := herdrapitest.Start(t, herdrapitest.Fast)
	ns := natstest.Start(t)
	if _, err := events.EnsureStream(context.Background(), ns.JS, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	return &fleet{t: t, herdr: srv, client: c, log: events.New(ns.JS, events.Options{Source: "fleetd/test/hook"}),
		newID: events.NewULIDSource(time.Now)}
}

// running is a bridge whose Run goroutine the test owns.
type running struct {
	*herdrbridge.Bridge
	errc chan error
	stop func()
}

// kill stops the bridge the way a dying gateway would: its context ends
// wherever it is.
func (r *running) kill(t *testing.T) {
	t.Helper()
	r.stop()
	if err := <-r.errc; err != nil {
		t.Errorf("bridge Run: %v", err)
	}
}

func (f *fleet) bridgeConfig() herdrbridge.BridgeConfig {
	return herdrbridge.BridgeConfig{
		Host: testHost, Client: f.client, Log: f.log, Roles: testRoles(f.t), Logger: testLogger(f.t),
		Poll: 50 * time.Millisecond, ReconnectBackoff: 50 * time.Millisecond, MaxReconnectBackoff: 200 * time.Millisecond,
	}
}

// testLogger sends the bridge's log to the test's, with FLEET_TEST_LOG set
// (it is verbose).
func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("FLEET_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(tWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tWriter struct{ t *testing.T }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// newBridge makes a bridge on the fleet, its config changed by mod (when
// not nil), without running it.
func (f *fleet) newBridge(mod func(*herdrbridge.BridgeConfig)) *herdrbridge.Bridge {
	f.t.Helper()
	cfg := f.bridgeConfig()
	if mod != nil {
		mod(&cfg)
	}
	b, err := herdrbridge.NewBridge(cfg)
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

func (f *fleet) start(mod func(*herdrbridge.BridgeConfig)) *running {
	f.t.Helper()
	b := f.newBridge(mod)
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{Bridge: b, errc: make(chan error, 1), stop: cancel}
	go func() { r.errc <- b.Run(ctx) }()
	f.t.Cleanup(func() {
		cancel()
		b.Close()
	})
	return r
}

// mustRoles parses a roles file, failing t when it does not parse.
func mustRoles(t *testing.T, file string) roles.Config {
	t.Helper()
	c, err := roles.Parse([]byte(file))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func testRoles(t *testing.T) roles.Config {
	t.Helper()
	return mustRoles(t, `{"roles":{
		"w-claude":{"env_class":"clean","tier":2},
		"w-gw":{"env_class":"gateway","base_url":"http://127.0.0.1:9/v1","tier":2},
		"w-sh":{"env_class":"clean","command":["sh","-c","echo LAUNCHED $FLEET_AGENT_ID $FLEET_ROLE $FLEET_HOST; exec sleep 60"]},
		"w-nats":{"env_class":"clean","command":["sh","-c","echo NATS creds=${FLEET_NATS_CREDS:-none} token=${FLEET_NATS_TOKEN:-none} END; exec sleep 60"]},
		"w-rs":{"env_class":"clean","command":["sh","-c","echo ARGS \"$*\" END; exec sleep 60","sh","{resume}"]}}}`)
}

func (f *fleet) add(agent string, d events.Data, turn string) events.Ack {
	f.t.Helper()
	ack, err := f.log.Append(context.Background(), events.Event{Subject: agent, CorrelationID: turn, Data: d})
	if err != nil {
		f.t.Fatal(err)
	}
	return ack
}

func (f *fleet) register(agent, pane string) {
	f.t.Helper()
	f.add(agent, events.AgentRegistered{Agent: agent, Host: testHost, Pane: pane, Role: "w-claude", Origin: "adopted"}, "")
}

// readyAgent starts script as a Claude stand-in in a new pane, waits until
// herdr sees it idle (or done), and registers the pane as agent.
func (f *fleet) readyAgent(agent, script string) herdrtest.Pane {
	f.t.Helper()
	p := herdrapitest.Spawn(f.t, f.herdr, herdrtest.PaneSpec{Argv: herdrapitest.AgentScript(script)})
	herdrapitest.StatusIs(f.t, f.client, p.ID, herdrapi.StatusIdle, herdrapi.StatusDone)
	f.register(agent, p.ID)
	return p
}

// queue appends a direct turn as the shim does: id = correlation id.
func (f *fleet) queue(agent, text string, deadline time.Time) string {
	f.t.Helper()
	id := f.newID()
	_, err := f.log.Append(context.Background(), events.Event{ID: id, Subject: agent, CorrelationID: id,
		Data: events.AgentQueued{From: "lead", Text: text, Deadline: deadline}})
	if err != nil {
		f.t.Fatal(err)
	}
	return id
}

func (f *fleet) history(agent string) []events.Event {
	f.t.Helper()
	subject, err := events.AgentAll(agent)
	if err != nil {
		f.t.Fatal(err)
	}
	return eventstest.ReadAll(f.t, f.log, events.Query{Subjects: []string{subject}})
}

func (f *fleet) read(subject string) []events.Event {
	f.t.Helper()
	return eventstest.ReadAll(f.t, f.log, events.Query{Subjects: []string{subject}})
}

// turn folds the log into a Book, as every reader does, and returns one turn.
func (f *fleet) turn(id string) lifecycle.Turn {
	f.t.Helper()
	b := lifecycle.NewBook()
	for _, ev := range eventstest.ReadAll(f.t, f.log, events.Query{Subjects: []string{"fleet.agent.>"}}) {
		b.Apply(ev)
	}
	t, _ := b.Turn(id)
	return t
}

func (f *fleet) waitTurn(id string, want ...lifecycle.State) lifecycle.Turn {
	f.t.Helper()
	var t lifecycle.Turn
	checkfor.Eventually(f.t, 20*time.Second, 50*time.Millisecond, func() error {
		t = f.turn(id)
		for _, w := range want {
			if t.State == w {
				return nil
			}
		}
		return fmt.Errorf("turn %s is %q, want %v", id, t.State, want)
	})
	return t
}

// count counts the agent's events that match.
func (f *fleet) count(agent string, match func(events.Event) bool) int {
	n := 0
	for _, ev := range f.history(agent) {
		if match(ev) {
			n++
		}
	}
	return n
}

func ofType(t events.Type, turn string) func(events.Event) bool {
	return func(ev events.Event) bool { return ev.Type() == t && (turn == "" || ev.CorrelationID == turn) }
}

// anyEvent matches every event.
func anyEvent(events.Event) bool { return true }

// typedCount counts the PTY writes to pane that carry s.
func (f *fleet) typedCount(pane, s string) int {
	n := 0
	for _, w := range f.herdr.Input(pane) {
		n += bytes.Count(w.Data, []byte(s))
	}
	return n
}

// typedAt is when s was first written to pane.
func (f *fleet) typedAt(pane, s string) time.Time {
	for _, w := range f.herdr.Input(pane) {
		if bytes.Contains(w.Data, []byte(s)) {
			return w.At
		}
	}
	return time.Time{}
}

func (f *fleet) waitOutput(pane, s string) {
	f.t.Helper()
	checkfor.Eventually(f.t, 20*time.Second, 20*time.Millisecond, func() error {
		if !bytes.Contains(f.herdr.Output(pane), []byte(s)) {
			return fmt.Errorf("pane %s has not printed %q", pane, s)
		}
		return nil
	})
}

// waitEvent waits until the log holds an event on subjects that matches.
func (f *fleet) waitEvent(subject string, match func(events.Event) bool) events.Event {
	f.t.Helper()
	var found events.Event
	checkfor.Eventually(f.t, 20*time.Second, 50*time.Millisecond, func() error {
		for _, ev := range eventstest.ReadAll(f.t, f.log, events.Query{Subjects: []string{subject}}) {
			if match(ev) {
				found = ev
				return nil
			}
		}
		return errors.New("no matching event on " + subject)
	})
	return found
}

// statuses lists the herdr status events of agent, in order.
func (f *fleet) statuses(agent string) []events.Status {
	var out []events.Status
	for _, ev := range f.history(agent) {
		if d, ok := ev.Data.(events.AgentStatusChanged); ok && d.Source == "herdr" && d.Violation == "" {
			out = append(out, d.Status)
		}
	}
	return out
}

// noRepeats fails when two consecutive herdr status events say the same.
func noRepeats(t *testing.T, sts []events.Status) {
	t.Helper()
	for i := 1; i < len(sts); i++ {
		if sts[i] == sts[i-1] {
			t.Errorf("status events repeat %q at %d: %v", sts[i], i, sts)
		}
	}
}

// The agent scripts stand in for Claude Code: herdrtest detects them as
// claude (HERDR_AGENT=claude), a Braille spinner in the title is working,
// a ❯ line is idle. Each draws Claude Code's prompt box (a ❯ row between
// two rules, a footer below): the bridge types only into an empty box.
// The cursor goes back into the box, after "❯ ", so the terminal's echo
// of a typed line shows in the box as Claude Code's composer shows a
// paste: the sign the bridge presses Enter on (Lander).
const box = `box() { printf '────────────────────\n❯ \n────────────────────\n  ? for shortcuts\n\033[3A\033[3G'; }
`

// busyAgent works for a while first, then answers each line it reads.
const busyAgent = box + `printf '\033]0;⠋ booting\007'; echo BUSY; sleep 1.5
while :; do
  printf '\033]0;claude\007'; echo READY; box
  IFS= read -r line || exit 0
  printf '\033]0;⠙ working\007'; sleep 0.3
  printf 'ANSWER: %s\n' "$line"
done`

// quickAgent is busyAgent without the busy start.
const quickAgent = box + `while :; do
  printf '\033]0;claude\007'; box
  IFS= read -r line || exit 0
  printf '\033]0;⠙ working\007'; sleep 0.3
  printf 'ANSWER: %s\n' "$line"
done`

// mutedAgent reads lines but never shows a state change, so only hooks
// can prove a submission: the first line empties its prompt box again,
// every later one stays in the box, like a prompt whose Enter was
// swallowed.
const mutedAgent = box + `box; IFS= read -r line || exit 0; echo "GOT: $line"; box
while IFS= read -r line; do
  echo "GOT: $line"; [ -n "$line" ] && last=$line
  printf '────────────────────\n❯ %s\n────────────────────\n  ? for shortcuts\n' "$last"
done`

// foreverBusy never becomes idle.
const foreverBusy = `printf '\033]0;⠋ busy\007'; echo BUSY; exec sleep 600`

func contains(s, sub string) bool { return strings.Contains(s, sub) }
