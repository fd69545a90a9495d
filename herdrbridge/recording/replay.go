package recording

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fleetd/fleetd/herdrbridge"
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
	p := &replayer{k: k, r: r, texts: map[string]string{}, cmds: map[string]string{}, typings: map[string]*typing{}, verdict: map[string]string{}}
	for i, st := range r.Steps {
		switch st.Op {
		case OpRead:
			p.read(st)
		case OpInput, OpKeys, OpPrompt:
			p.write(i, st)
		case OpLog:
			p.log(st)
		}
	}
	p.flush()
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
	if dr, ok := p.k.(herdrbridge.DialogReader); ok {
		if d, ok := dr.ParseDialog(screen); ok {
			parts = append(parts, fmt.Sprintf("dialog=%q(%d options)", clip(d.Question, 40), len(d.Options)))
		}
	}
	if t := p.typings[st.Pane]; t != nil {
		if l, ok := p.k.(herdrbridge.Lander); ok && t.pending() && len(t.got) > t.clearOps {
			parts = append(parts, "landed="+l.Landed(screen, t.shows).String())
		}
		if d, ok := p.k.(herdrbridge.EnterDropper); ok && t.entered && !t.submitted {
			parts = append(parts, fmt.Sprintf("unsubmitted=%v", d.Unsubmitted(screen, t.shows)))
		}
		if lc, ok := p.k.(herdrbridge.LazyClearer); ok && t.clear && len(t.got) >= t.clearOps && t.pending() {
			parts = append(parts, fmt.Sprintf("cleared=%v", lc.Cleared(screen)))
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
	t.got = append(t.got, got)
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

// log takes in one log event: a turn's text, its typing, its submission,
// an attention.
func (p *replayer) log(st Step) {
	switch st.Event {
	case "queued":
		p.texts[st.Turn], _ = st.Data["text"].(string)
		p.cmds[st.Turn], _ = st.Data["command"].(string)
	case "typed":
		p.typed(st)
	case "submitted", "replied", "failed":
		for _, t := range p.typings {
			if t.turn == st.Turn {
				t.submitted = true
			}
		}
	case "attention":
		// An attention names no pane: it is about the agent's, the last
		// looked at.
		reason, _ := st.Data["reason"].(string)
		if slices.Contains(screenAttention, reason) && p.verdict[p.pane] != reason {
			p.problem("attention %s, but the last look at the screen (%s) said %q", reason, p.pane, p.verdict[p.pane])
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
	if v := p.verdict[pane]; v != herdrbridge.ScreenReady {
		p.problem("turn %s: typed into %s after a look that said %q, not ready", st.Turn, pane, v)
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
	t := &typing{turn: st.Turn, shows: plan.Shows(), clear: clear}
	enter := op{op: OpKeys, keys: []string{"enter"}}
	if clear {
		command := "/clear"
		if lc, ok := p.k.(herdrbridge.LazyClearer); ok {
			command = lc.ClearCommand()
		}
		if method == herdrbridge.MethodPrompt {
			t.want = append(t.want, op{op: OpPrompt, text: command})
		} else {
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
		if plan.LeftBeforeEnter {
			t.want = append(t.want, op{op: OpKeys, keys: []string{"left"}})
		}
		t.want = append(t.want, enter)
	}
	p.typings[pane] = t
}
