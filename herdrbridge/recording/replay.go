package recording

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/lifecycle"
)

// Result is what a replay said of a recording.
type Result struct {
	// Decisions are the decisions, one line each: the typing plan of each
	// turn, and what each look at the screen said (consecutive looks that
	// said the same thing are one line, with their range of reads).
	Decisions []string
	// Problems are where the decisions disagree with what the bridge did
	// when it was recorded: a typing that is not the plan's, a typing
	// after a look that did not say ready, an attention about the screen
	// no look showed.
	Problems []string
}

// screenAttention are the attention reasons a look at the screen gives.
var screenAttention = []string{herdrbridge.AttentionBashMode, herdrbridge.AttentionComposerText, herdrbridge.AttentionNoPromptBox}

// op is one herdr write of a typing: its method and what it carried.
type op struct {
	op, text string
	keys     []string
}

func (o op) String() string {
	switch o.op {
	case OpKeys:
		return "keys" + fmt.Sprint(o.keys)
	case OpInput:
		if len(o.keys) > 0 {
			return fmt.Sprintf("input(%q)+keys%v", o.text, o.keys)
		}
		return fmt.Sprintf("input(%q)", o.text)
	}
	return fmt.Sprintf("%s(%q)", o.op, o.text)
}

// typing is one turn being typed into a pane.
type typing struct {
	turn      string
	shows     string
	clear     bool
	clearOps  int // the writes of the clear typed first
	want, got []op
	entered   bool
	submitted bool
	// gates are the writes the bridge sends only once EnterAfter lets
	// it (the Enter, and the Left before it), by index in want; lastAt
	// is the time of the last write, from which a gate's wait counts.
	gates  map[int]gate
	lastAt time.Time
	// look is the last look at the composer in the wait for the next
	// gate: its read, what EnterAfter said then, and how long after the
	// last write.
	look struct {
		read                int
		verdict, less, more string // at the look's time, clockSlack before and after
		waited              time.Duration
	}
}

// gate is one wait for Enter after text was typed (Bridge.enter).
type gate struct {
	// landed: the kind reads the composer for the text (Lander and
	// MethodLanded); else the bridge waits the fixed pause.
	landed bool
	pause  time.Duration
	shows  string // what the composer shows once the text landed
}

// clockSlack is how far apart the recorded times and the bridge's own
// may be: a recording times a read when its answer passed the proxy and
// a write when its request did, the bridge reads its clock a moment
// later, and both are kept in whole milliseconds. A timed decision that
// changes within clockSlack of the recorded time was taken either way.
const clockSlack = 5 * time.Millisecond

// epoch is the fake clock's time 0, the recording's first step.
var epoch = time.Unix(0, 0).UTC()

// settling is what the replay holds of the bridge's typing gate for a
// pane (herdrbridge.Settle): the memory of looks without a prompt box,
// and the last look that decided on typing.
type settling struct {
	hold       string // what the statuses said at the last look (replayer.hold)
	noBoxSince time.Time
	last       herdrbridge.Look
	read       int
	at         time.Time
	looked     bool
}

// pending: the plan's writes are not all done yet.
func (t *typing) pending() bool { return t != nil && len(t.got) < len(t.want) }

// replayer walks a recording's steps.
type replayer struct {
	k       herdrbridge.Kind
	r       *Recording
	res     Result
	texts   map[string]string // turn → its queued text
	cmds    map[string]string // turn → its queued command
	typings map[string]*typing
	verdict map[string]string // pane → what its last look said
	pane    string            // the pane of the last look
	reads   int
	// now is the fake clock: the recorded time of the step at hand.
	now time.Time
	// queued are the turns queued and not typed (a deferral queues its
	// turn again); inFlight the turn typed and not yet replied or
	// failed. A look at the screen while a turn waits and none is in
	// flight is one the bridge took to decide on typing (Bridge.ready).
	queued   map[string]bool
	inFlight string
	settle   map[string]*settling // pane → its typing gate
	// attention is the reason the log holds; owed an attention the
	// gate called for that the log does not show yet.
	attention string
	owed      *owed
	// statuses is what herdr and the hooks said of the agent as the
	// recording tells it; known marks what it told (what was said before
	// it began is not in it), statusAt when the last of it came.
	statuses herdrbridge.Statuses
	known    struct{ labelled, refused, herdr, hooked, hook bool }
	statusAt time.Time
	// agentPane is the pane the agent is registered in, once the
	// recording names it: herdr's word about another is not about it.
	agentPane string
	// run is the line of the reads that said the same thing, not yet
	// written.
	run struct {
		key         string
		first, last int
		n           int
	}
}

// Replay feeds a recording through the kind's decision code (see the
// package doc) and returns what it decides. Each look at a screen says
// what the kind reads there: its composer, the bridge's readiness
// (herdrbridge.ScreenReadiness), a dialog waiting for a person (a
// DialogReader's ParseDialog), and, while a turn is typed, whether its
// text has landed (Lander), whether Enter was dropped (EnterDropper),
// whether a clear took effect (LazyClearer).
func Replay(k herdrbridge.Kind, r *Recording) Result {
	p := &replayer{k: k, r: r, texts: map[string]string{}, cmds: map[string]string{}, typings: map[string]*typing{}, verdict: map[string]string{},
		queued: map[string]bool{}, settle: map[string]*settling{}}
	p.statuses.LazySession = k.LazySession()
	for i, st := range r.Steps {
		p.now = epoch.Add(time.Duration(st.At) * time.Millisecond)
		switch st.Op {
		case OpBefore:
			p.before(st)
		case OpHerdr:
			p.herdr(st)
		case OpRead:
			p.read(st)
		case OpInput, OpKeys, OpPrompt:
			p.write(i, st)
		case OpLog:
			p.log(st)
		}
	}
	p.flush()
	p.payOwed("")
	for _, t := range p.typings {
		if t.pending() {
			p.problem("turn %s: typing stopped after %d of the plan's %d writes", t.turn, len(t.got), len(t.want))
		}
	}
	return p.res
}

func (p *replayer) decide(format string, args ...any) {
	p.flush()
	p.res.Decisions = append(p.res.Decisions, fmt.Sprintf(format, args...))
}

func (p *replayer) problem(format string, args ...any) {
	p.res.Problems = append(p.res.Problems, fmt.Sprintf(format, args...))
}

func (p *replayer) flush() {
	if p.run.n == 0 {
		return
	}
	reads := fmt.Sprintf("read %d", p.run.first)
	if p.run.n > 1 {
		reads = fmt.Sprintf("reads %d-%d", p.run.first, p.run.last)
	}
	p.res.Decisions = append(p.res.Decisions, reads+" "+p.run.key)
	p.run.n = 0
}

// read decides on one look at the screen.
func (p *replayer) read(st Step) {
	p.payOwed(st.Pane)
	p.reads++
	screen := ""
	if st.Screen >= 0 && st.Screen < len(p.r.Screens) {
		screen = p.r.Screens[st.Screen]
	}
	c := p.k.ParseComposer(screen)
	v := herdrbridge.ScreenReadiness(p.k, screen)
	p.verdict[st.Pane] = v
	p.pane = st.Pane
	parts := []string{st.Pane + ":", "composer=" + describe(c), "→", v}
	t := p.typings[st.Pane]
	if len(p.queued) > 0 && p.inFlight == "" && !t.pending() {
		// What the statuses say goes in when the recording tells it: a
		// recording begins with what the bridge had been told of them
		// (OpBefore); one made before it did leaves them untold.
		hold := p.hold()
		if hold != "?" {
			parts = append(parts, "statuses="+hold)
		}
		parts = append(parts, "settle="+p.look(st.Pane, v, hold))
	} else if s := p.settle[st.Pane]; s != nil {
		s.looked = false
	}
	if dr, ok := p.k.(herdrbridge.DialogReader); ok {
		if d, ok := dr.ParseDialog(screen); ok {
			parts = append(parts, fmt.Sprintf("dialog=%q(%d options)", clip(d.Question, 40), len(d.Options)))
		}
	}
	if t != nil {
		if l, ok := p.k.(herdrbridge.Lander); ok && t.pending() && len(t.got) > t.clearOps {
			parts = append(parts, "landed="+l.Landed(screen, t.shows).String())
		}
		if d, ok := p.k.(herdrbridge.EnterDropper); ok && t.entered && !t.submitted {
			parts = append(parts, fmt.Sprintf("unsubmitted=%v", d.Unsubmitted(screen, t.shows)))
		}
		if lc, ok := p.k.(herdrbridge.LazyClearer); ok && t.clear && len(t.got) >= t.clearOps && t.pending() {
			parts = append(parts, fmt.Sprintf("cleared=%v", lc.Cleared(screen)))
		}
		if g, ok := t.gates[len(t.got)]; ok && t.pending() && g.landed {
			parts = append(parts, "enter="+p.landing(t, g, screen))
		}
	}
	key := strings.Join(parts, " ")
	if p.run.n > 0 && p.run.key == key {
		p.run.last, p.run.n = p.reads, p.run.n+1
		return
	}
	p.flush()
	p.run.key, p.run.first, p.run.last, p.run.n = key, p.reads, p.reads, 1
}

// look takes a look the bridge took to decide on typing through its
// typing gate (herdrbridge.Settle) at the recorded time, keeps what the
// statuses said then (hold), and says what the gate decided: type, wait,
// or call for a person. An attention the gate calls for that the log
// does not hold yet is owed: the bridge records it before it looks
// again.
func (p *replayer) look(pane, verdict, hold string) string {
	s := p.settling(pane)
	s.hold = hold
	since := s.noBoxSince
	l := herdrbridge.Settle(verdict, since, p.now, herdrbridge.DefaultAttentionAfter)
	s.noBoxSince, s.last, s.read, s.at, s.looked = l.NoBoxSince, l, p.reads, p.now, true
	if l.Attention != "" && l.Attention != p.attention &&
		herdrbridge.Settle(verdict, since, p.now.Add(-clockSlack), herdrbridge.DefaultAttentionAfter).Attention != "" {
		p.owed = &owed{pane: pane, reason: l.Attention, read: p.reads, at: p.now, since: l.NoBoxSince}
	}
	switch {
	case l.Type:
		return "type"
	case l.Attention != "":
		return "attention(" + l.Attention + ")"
	}
	return "wait"
}

func (p *replayer) settling(pane string) *settling {
	s := p.settle[pane]
	if s == nil {
		s = &settling{}
		p.settle[pane] = s
	}
	return s
}

// hold is what the statuses say of typing now (herdrbridge.Statuses.Hold)
// for every way the recording can have begun: each status it has not
// told yet is taken both ways. "open": they let the agent be typed into
// whatever was said before; "held(reasons)": they hold it back whatever
// was, for these reasons; "?": that depends on what was said before the
// recording began.
// A status that came within clockSlack of the look may have come after
// the bridge's decision: then it says "?" rather than held.
func (p *replayer) hold() string {
	bools := func(known, v bool) []bool {
		if known {
			return []bool{v}
		}
		return []bool{false, true}
	}
	herdr := []herdrapi.AgentStatus{p.statuses.Herdr}
	if !p.known.herdr {
		herdr = []herdrapi.AgentStatus{herdrapi.StatusIdle, herdrapi.StatusWorking}
	}
	hook := []events.Status{p.statuses.Hook}
	if !p.known.hook {
		hook = []events.Status{events.StatusIdle, events.StatusWorking}
	}
	reasons := map[string]bool{}
	for _, labelled := range bools(p.known.labelled, p.statuses.Labelled) {
		for _, refused := range bools(p.known.refused, p.statuses.Refused) {
			for _, hooked := range bools(p.known.hooked, p.statuses.Hooked) {
				for _, h := range herdr {
					for _, k := range hook {
						s := herdrbridge.Statuses{Labelled: labelled, Refused: refused, Herdr: h, Hooked: hooked, Hook: k, LazySession: p.statuses.LazySession}
						reasons[s.Hold()] = true
					}
				}
			}
		}
	}
	switch {
	case len(reasons) == 1 && reasons[""]:
		return "open"
	case reasons[""] || p.now.Sub(p.statusAt) < clockSlack:
		return "?"
	}
	held := slices.Sorted(maps.Keys(reasons))
	return "held(" + strings.Join(held, "|") + ")"
}

// herdr folds herdr's word about the agent's pane into its statuses, as
// the bridge takes it (Bridge.observe, Bridge.peek, Bridge.onLifecycle):
// a status event, an answer to agent.get or pane.get (which names the
// agent, or none), an agent detection. The bridge acts on herdr's own
// word; the log's status event from herdr comes a moment later. Until a
// recording names the agent's pane, every pane's word counts.
func (p *replayer) herdr(st Step) {
	if p.agentPane != "" && st.Pane != p.agentPane {
		return
	}
	switch st.Event {
	case "pane_agent_status_changed":
		p.statuses.Herdr, p.known.herdr = herdrapi.AgentStatus(st.State), true
	case "agent_get", "pane_get":
		p.statuses.Herdr, p.known.herdr = herdrapi.AgentStatus(st.State), true
		p.statuses.Labelled, p.known.labelled = st.Text != "", true
	case "pane_agent_detected":
		// herdr names the agent in the pane, or no longer; one it names
		// again takes agent.prompt again.
		p.statuses.Labelled, p.known.labelled = st.State != "", true
		if st.State != "" {
			p.statuses.Refused, p.known.refused = false, true
		}
	default:
		return
	}
	p.statusAt = p.now
}

// before takes in what the bridge had been told of one of the agent's
// statuses when the recording began (an OpBefore step): known from the
// start, not taken both ways. It came before any look, so it is no
// status that came within clockSlack of one.
func (p *replayer) before(st Step) {
	p.agentPane = st.Pane
	switch st.Event {
	case BeforeHerdr:
		p.statuses.Herdr, p.statuses.Labelled = herdrapi.AgentStatus(st.State), st.Text != ""
		p.known.herdr, p.known.labelled = true, true
	case BeforeHook:
		p.statuses.Hook, p.known.hook = events.Status(st.State), true
	case BeforeSession:
		p.statuses.Hooked, p.known.hooked = st.State == "started", true
	case BeforePrompt:
		p.statuses.Refused, p.known.refused = st.State == "refused", true
	}
}

// status folds one status event of the log into what the recording
// tells of the agent's statuses, as the bridge folds it (Bridge.apply,
// Bridge.observe).
func (p *replayer) status(st Step) {
	status, _ := st.Data["status"].(string)
	source, _ := st.Data["source"].(string)
	switch source {
	case "herdr":
		p.statuses.Herdr, p.known.herdr = herdrapi.AgentStatus(status), true
	case "hook":
		p.statuses.Hook, p.known.hook = events.Status(status), true
	case herdrbridge.StatusSourceScreen:
		// A dialog answered No stopped the turn: the hooks' last word
		// (blocked, or working) is over.
		if p.known.hook && events.Status(status) == events.StatusIdle && (p.statuses.Hook == events.StatusBlocked || p.statuses.Hook == events.StatusWorking) {
			p.statuses.Hook = events.StatusIdle
		}
	default:
		return
	}
	p.statusAt = p.now
}

// owed is an attention the typing gate called for at a look.
type owed struct {
	pane, reason string
	read         int
	at, since    time.Time
}

// payOwed reports an owed attention the bridge did not record before
// it looked at pane again ("" for the end of the recording).
func (p *replayer) payOwed(pane string) {
	o := p.owed
	if o == nil || (pane != "" && pane != o.pane) {
		return
	}
	p.owed = nil
	why := ""
	if o.reason == herdrbridge.AttentionNoPromptBox {
		why = fmt.Sprintf(", no prompt box for %s since %s", o.at.Sub(o.since), o.since.Sub(epoch))
	}
	p.problem("read %d (at %s): the typing gate (Settle) called for attention %s%s, and the bridge recorded none", o.read, o.at.Sub(epoch), o.reason, why)
}

// landing decides on one look at the composer while the bridge waits to
// press Enter after text (Bridge.awaitLanding), at the recorded time,
// and reports a look the bridge should have pressed Enter after.
func (p *replayer) landing(t *typing, g gate, screen string) string {
	if t.look.read > 0 && t.look.less != herdrbridge.EnterNotYet {
		p.problem("turn %s: read %d said %s %s after the text (EnterAfter), and the bridge looked again (read %d) instead of pressing Enter",
			t.turn, t.look.read, t.look.verdict, t.look.waited, p.reads)
	}
	state := p.k.(herdrbridge.Lander).Landed(screen, g.shows)
	waited := p.now.Sub(t.lastAt)
	v := herdrbridge.EnterAfter(state, waited, g.pause)
	t.look.read, t.look.verdict, t.look.waited = p.reads, v, waited
	t.look.less = herdrbridge.EnterAfter(state, waited-clockSlack, g.pause)
	t.look.more = herdrbridge.EnterAfter(state, waited+clockSlack, g.pause)
	if v == herdrbridge.EnterShell {
		// The bridge presses no Enter (ErrShellMode): what it types next
		// is the recovery's, not the plan's.
		t.want = t.got
	}
	return v
}

// told is a status as the recording tells it.
func (p *replayer) told(known bool, status string) string {
	switch {
	case !known:
		return "not in the recording"
	case status == "":
		return "none yet"
	}
	return status
}

// describe names what a composer holds.
func describe(c herdrbridge.Composer) string {
	switch {
	case !c.Visible:
		return "none"
	case c.Bash && c.Text == "":
		return "bash"
	case c.Bash:
		return fmt.Sprintf("bash(%q)", clip(c.Text, 40))
	case c.Text == "":
		return "empty"
	}
	return fmt.Sprintf("text(%q)", clip(c.Text, 40))
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// write matches one herdr write against the pane's typing.
func (p *replayer) write(i int, st Step) {
	t := p.typings[st.Pane]
	if !t.pending() {
		return // a key of recovery or of the scenario's own: no plan to match
	}
	got := op{op: st.Op, text: st.Text, keys: st.Keys}
	want := t.want[len(t.got)]
	if g, ok := t.gates[len(t.got)]; ok {
		p.gate(t, g, got)
	}
	t.got = append(t.got, got)
	t.lastAt, t.look = p.now, typing{}.look
	if got.String() != want.String() {
		p.problem("turn %s: write %d (step %d) was %s, the plan says %s", t.turn, len(t.got), i, got, want)
		t.want = t.got // stop matching the rest
	}
	if slices.Contains(got.keys, "enter") && !t.pending() {
		t.entered = true
	}
	if t.clear && len(t.got) > t.clearOps {
		t.clear = false // past the clear: the text's own writes
	}
}

// gate decides, at the recorded time of a write the bridge sends only
// once EnterAfter lets it, whether it did: after a look at the composer
// that said so (a Lander), or after the fixed pause.
func (p *replayer) gate(t *typing, g gate, w op) {
	waited := p.now.Sub(t.lastAt)
	var v, more string
	switch {
	case !g.landed:
		v = herdrbridge.EnterAfter(herdrbridge.LandingUnknown, waited, g.pause)
		more = herdrbridge.EnterAfter(herdrbridge.LandingUnknown, waited+clockSlack, g.pause)
		if more == herdrbridge.EnterNotYet {
			p.problem("turn %s: %s %s after the text, before the pause (%s): EnterAfter says %s", t.turn, w, waited, g.pause, v)
		}
	case t.look.read == 0:
		v = "no look"
		p.problem("turn %s: %s %s after the text, with no look at the composer since", t.turn, w, waited)
	default:
		v = t.look.verdict
		if t.look.more == herdrbridge.EnterNotYet {
			p.problem("turn %s: %s %s after the text, when the last look at the composer (read %d, %s after it) said %s (EnterAfter)",
				t.turn, w, waited, t.look.read, t.look.waited, v)
		}
	}
	p.decide("turn %s: %s: %s", t.turn, w, v)
}

// log takes in one log event: a turn's text, its typing, its submission,
// an attention.
func (p *replayer) log(st Step) {
	switch st.Event {
	case "queued":
		p.texts[st.Turn], _ = st.Data["text"].(string)
		p.cmds[st.Turn], _ = st.Data["command"].(string)
		p.queued[st.Turn] = true
	case "typed":
		p.typed(st)
	case "registered":
		// A new pane: herdr's view of it starts afresh; and the session
		// with the hooks' report of it (Bridge.apply).
		if pane, _ := st.Data["pane"].(string); pane != p.agentPane {
			p.statuses.Labelled, p.statuses.Herdr = false, ""
			p.agentPane = pane
		}
		p.statuses.Hooked = false
		// A sandbox is the pane's foreground process, not the agent:
		// herdr refuses agent.prompt for it.
		sandbox, _ := st.Data["sandbox"].(string)
		p.statuses.Refused = sandbox != ""
		p.known.labelled, p.known.herdr, p.known.hooked, p.known.refused = true, true, true, true
		p.statusAt = p.now
	case "status":
		p.status(st)
	case "deferred":
		// herdr refused it having typed nothing: back at the head of the
		// queue; refused agent.prompt, the agent is typed into as one
		// herdr does not recognise.
		p.queued[st.Turn] = true
		if reason, _ := st.Data["reason"].(string); reason == "agent_not_ready" || reason == "agent_not_found" {
			p.statuses.Refused, p.known.refused = true, true
			p.statusAt = p.now
		}
		if p.inFlight == st.Turn {
			p.inFlight = ""
		}
	case "submitted", "replied", "failed":
		for _, t := range p.typings {
			if t.turn == st.Turn {
				t.submitted = true
			}
		}
		if st.Event != "submitted" {
			delete(p.queued, st.Turn)
			if p.inFlight == st.Turn {
				p.inFlight = ""
			}
		}
	case "session":
		if state, _ := st.Data["state"].(string); state == "started" {
			p.attention = "" // the bridge forgets it with the old session
			p.statuses.Hooked, p.known.hooked = true, true
			p.statusAt = p.now
		}
	case "attention":
		// An attention names no pane: it is about the agent's, the last
		// looked at.
		reason, _ := st.Data["reason"].(string)
		if slices.Contains(screenAttention, reason) && p.verdict[p.pane] != reason {
			p.problem("attention %s, but the last look at the screen (%s) said %q", reason, p.pane, p.verdict[p.pane])
		}
		if s := p.settle[p.pane]; s != nil && s.looked && reason != "" && reason == p.verdict[p.pane] && s.last.Attention != reason &&
			herdrbridge.Settle(p.verdict[p.pane], s.noBoxSince, s.at.Add(clockSlack), herdrbridge.DefaultAttentionAfter).Attention != reason {
			p.problem("attention %s at %s: the typing gate (Settle) said %s at read %d, the box missing for %s since %s, under AttentionAfter (%s)",
				reason, p.now.Sub(epoch), "wait", s.read, s.at.Sub(s.noBoxSince), s.noBoxSince.Sub(epoch), herdrbridge.DefaultAttentionAfter)
		}
		p.attention = reason
		if p.owed != nil && p.owed.reason == reason {
			p.owed = nil
		}
	}
}

// typed plans the turn the bridge recorded as typed, as the bridge
// plans it (Bridge.plan, Bridge.execute), and expects the writes.
func (p *replayer) typed(st Step) {
	pane := st.Pane
	method, _ := st.Data["method"].(string)
	delivery, _ := st.Data["delivery"].(string)
	if n, _ := st.Data["enter"].(float64); n > 0 {
		p.decide("turn %s: Enter again (%v)", st.Turn, n)
		p.typings[pane] = &typing{turn: st.Turn, want: []op{{op: OpKeys, keys: []string{"enter"}}}}
		return
	}
	delete(p.queued, st.Turn)
	p.inFlight = st.Turn
	// The look before the typing is the gate's when the recording holds
	// the turn's queueing; else its verdict alone.
	gated := p.settle[pane] != nil && p.settle[pane].looked
	if s := p.settle[pane]; p.verdict[pane] != herdrbridge.ScreenReady || gated && !s.last.Type {
		p.problem("turn %s: typed into %s after a look that said %q, not ready", st.Turn, pane, p.verdict[pane])
	} else if gated && strings.HasPrefix(s.hold, "held") {
		p.problem("turn %s: typed into %s while the statuses said %s (Statuses.Hold): herdr's last word %s, the hooks' %s",
			st.Turn, pane, s.hold, p.told(p.known.herdr, string(p.statuses.Herdr)), p.told(p.known.hook, string(p.statuses.Hook)))
	}
	var plan herdrbridge.Plan
	if cmd := p.cmds[st.Turn]; cmd != "" {
		plan = p.k.PlanCommand(cmd)
	} else {
		plan = p.k.PlanText(lifecycle.NormalizeText(p.texts[st.Turn]), herdrbridge.Limits{})
		if plan.Delivery == herdrbridge.DeliveryFile {
			prompt, _ := st.Data["prompt"].(string)
			plan.Pieces = []string{prompt}
		}
	}
	clear, _ := st.Data["clear"].(bool)
	p.decide("turn %s: plan %s, %d piece(s), bang first %v, left before enter %v, clear %v", st.Turn, plan.Delivery, len(plan.Pieces), plan.BangFirst, plan.LeftBeforeEnter, clear)
	if plan.Delivery != delivery {
		p.problem("turn %s: the plan's delivery is %s, the bridge recorded %s", st.Turn, plan.Delivery, delivery)
	}
	t := &typing{turn: st.Turn, shows: plan.Shows(), clear: clear, gates: map[int]gate{}, lastAt: p.now}
	_, lander := p.k.(herdrbridge.Lander)
	landed := lander && method == herdrbridge.MethodLanded
	enter := op{op: OpKeys, keys: []string{"enter"}}
	if clear {
		command := "/clear"
		if lc, ok := p.k.(herdrbridge.LazyClearer); ok {
			command = lc.ClearCommand()
		}
		if method == herdrbridge.MethodPrompt {
			t.want = append(t.want, op{op: OpPrompt, text: command})
		} else {
			t.gates[len(t.want)+1] = gate{landed: landed, pause: herdrbridge.DefaultEnterDelay, shows: command}
			t.want = append(t.want, op{op: OpInput, text: command}, enter)
		}
		t.clearOps = len(t.want)
	}
	if method == herdrbridge.MethodPrompt {
		t.want = append(t.want, op{op: OpPrompt, text: plan.Pieces[0]})
	} else {
		for i, piece := range plan.Pieces {
			t.want = append(t.want, op{op: OpInput, text: piece})
			if i == 0 && plan.BangFirst {
				t.want = append(t.want, op{op: OpKeys, keys: []string{"left", "backspace", "right"}})
			}
		}
		// Enter, and the Left before it, wait for the text to land (a
		// Lander), else the pause goes before the first of them (the
		// one after the Left is a moment the replay does not weigh).
		g := gate{landed: landed, pause: herdrbridge.DefaultEnterDelay, shows: plan.Shows()}
		t.gates[len(t.want)] = g
		if plan.LeftBeforeEnter {
			t.want = append(t.want, op{op: OpKeys, keys: []string{"left"}})
			if landed {
				t.gates[len(t.want)] = g
			}
		}
		t.want = append(t.want, enter)
	}
	p.typings[pane] = t
}
