package recording_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fleetd/fleetd/herdrbridge/recording"
)

// history is what came before a scenario, built line by line: the
// agent's log events and herdr's wire, each a second after the last.
type history struct {
	t     time.Time
	conn  int
	wire  []recording.Wire
	logs  []recording.LogEvent
	scrub recording.Scrubber
}

// newHistory starts with the bridge's subscription to herdr's events
// (connection 1000).
func newHistory() *history {
	h := &history{t: time.Unix(1e9, 0)}
	h.wire = []recording.Wire{{At: h.t, Conn: 1000, Request: true, Line: []byte(`{"method":"events.subscribe"}`)}}
	return h
}

func (h *history) tick() time.Time { h.t = h.t.Add(time.Second); return h.t }

func (h *history) log(typ, data string) {
	h.logs = append(h.logs, recording.LogEvent{Time: h.tick(), Type: typ, Data: json.RawMessage(data)})
}

// ask is a request on a connection of its own and herdr's answer.
func (h *history) ask(request, answer string) {
	h.conn++
	at := h.tick()
	h.wire = append(h.wire,
		recording.Wire{At: at, Conn: h.conn, Request: true, Line: []byte(request)},
		recording.Wire{At: at, Conn: h.conn, Line: []byte(answer)})
}

// event is a line of herdr's on the bridge's subscription (connection 1000).
func (h *history) event(line string) {
	h.wire = append(h.wire, recording.Wire{At: h.tick(), Conn: 1000, Line: []byte(line)})
}

func (h *history) before() []string {
	var out []string
	for _, st := range recording.Before(h.wire, h.logs, &h.scrub) {
		if st.Op != recording.OpBefore || st.At != 0 {
			panic(fmt.Sprintf("Before made %+v, not a step at time 0", st))
		}
		out = append(out, fmt.Sprintf("%s %s=%q %q", st.Pane, st.Event, st.State, st.Text))
	}
	return out
}

// Before says, at time 0, what the bridge had been told of the agent's
// statuses when a scenario began, folded as the bridge folds them:
// herdr's last word about the pane the agent is registered in (an answer
// or an event; the agent it names), the hooks' last status, whether they
// reported its session since it was registered, whether herdr refuses
// agent.prompt for it (until it names the agent anew).
func TestBeforeSaysTheStatusesTheBridgeHadWhenTheScenarioBegan(t *testing.T) {
	h := newHistory()

	if got, want := h.before(), []string{
		` herdr="" ""`, ` hook="" ""`, ` session="none" ""`, ` prompt="accepted" ""`,
	}; !slices.Equal(got, want) {
		t.Errorf("before anything: got %q, want %q", got, want)
	}

	h.log("registered", `{"pane":"w1:p1"}`)
	h.ask(`{"method":"agent.get","params":{"target":"w1:p1"}}`, `{"result":{"type":"agent_info","agent":{"pane_id":"w1:p1","agent":"claude","agent_status":"idle"}}}`)
	h.ask(`{"method":"agent.get","params":{"target":"w1:p9"}}`, `{"result":{"type":"agent_info","agent":{"pane_id":"w1:p9","agent":"codex","agent_status":"working"}}}`) // another pane's
	h.ask(`{"method":"agent.get","params":{"target":"w1:p1"}}`, `{"error":{"code":"agent_not_found"}}`)                                                                  // says nothing
	h.log("session", `{"state":"started"}`)
	h.log("status", `{"source":"hook","status":"working"}`)
	h.event(`{"event":"pane.agent_status_changed","data":{"pane_id":"w1:p1","agent_status":"working"}}`)
	h.log("status", `{"source":"herdr","status":"working"}`) // the log's echo of herdr's word: herdr's own counts
	h.log("deferred", `{"reason":"agent_not_ready"}`)
	h.log("status", `{"source":"hook","status":"idle"}`)
	if got, want := h.before(), []string{
		`pane-1 herdr="working" "claude"`, `pane-1 hook="idle" ""`, `pane-1 session="started" ""`, `pane-1 prompt="refused" ""`,
	}; !slices.Equal(got, want) {
		t.Errorf("after a turn herdr refused: got %q, want %q", got, want)
	}

	// herdr names the agent anew: agent.prompt is accepted again.
	h.event(`{"event":"pane_agent_detected","data":{"pane_id":"w1:p1","agent":"claude"}}`)
	h.event(`{"event":"pane.agent_status_changed","data":{"pane_id":"w1:p1","agent_status":"done"}}`)
	if got, want := h.before(), []string{
		`pane-1 herdr="done" "claude"`, `pane-1 hook="idle" ""`, `pane-1 session="started" ""`, `pane-1 prompt="accepted" ""`,
	}; !slices.Equal(got, want) {
		t.Errorf("after herdr named the agent again: got %q, want %q", got, want)
	}

	// Restarted in a sandbox in a new pane: herdr's view of it starts
	// afresh, its session too; the hooks' last word stays.
	h.log("registered", `{"pane":"w1:p2","sandbox":"bwrap"}`)
	if got, want := h.before(), []string{
		`pane-2 herdr="" ""`, `pane-2 hook="idle" ""`, `pane-2 session="none" ""`, `pane-2 prompt="refused" ""`,
	}; !slices.Equal(got, want) {
		t.Errorf("after a registration in a new pane: got %q, want %q", got, want)
	}
}
