package herdrbridge

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/lifecycle"
)

// Dialog is a dialog of an agent's CLI that waits for a person — a
// permission prompt — as read from its screen: what it is (Title), what
// about (Detail), what it asks and its options in order, the first
// answered by typing "1".
type Dialog struct {
	Title, Detail, Question string
	Options                 []string
	// Selected is the option (from 1) the dialog has selected now, when a
	// SelectionReader read it; 0 when unknown. It is not part of what
	// makes two dialogs the Same, nor of what the log records.
	Selected int
}

// Same reports whether d and o are one dialog, as far as a screen shows.
func (d Dialog) Same(o Dialog) bool {
	return d.Title == o.Title && d.Detail == o.Detail && d.Question == o.Question && slices.Equal(d.Options, o.Options)
}

// DialogReader is a kind whose dialogs fleetd can read off its screen and
// answer by typing an option's number: such an agent blocked on one shows
// it in the roster (events.AgentDialog), and POST /agents/{id}/answer
// answers it.
type DialogReader interface {
	// ParseDialog finds the dialog on screen; false when none shows.
	ParseDialog(screen string) (Dialog, bool)
}

// DialogKeys is a DialogReader whose dialogs are answered otherwise than
// by typing the option's number: AnswerKeys are the keys that choose
// option (from 1) of d.
type DialogKeys interface {
	AnswerKeys(d Dialog, option int) []string
}

// SelectionReader is a DialogKeys kind whose dialog keeps a selection the
// keys move from, shown only by colour (OpenCode's: a person at the pane
// may have moved it): Selected reads it off the screen rendered with its
// styles (herdr's read with format ansi), and the answer's keys start from
// there. Nothing is typed when it cannot be read.
type SelectionReader interface {
	Selected(styled string, d Dialog) (option int, ok bool)
}

// answerKeys are the keys that choose option of d on reader's screen.
func answerKeys(reader DialogReader, d Dialog, option int) []string {
	if k, ok := reader.(DialogKeys); ok {
		return k.AnswerKeys(d, option)
	}
	return []string{strconv.Itoa(option)}
}

// QuietDialogs is a DialogReader kind whose CLI says nothing — no hook,
// no status herdr can see past the hooks' "working" — while a dialog
// waits: the gateway looks at such an agent's screen for one once a
// quietLook while a turn of it is submitted.
type QuietDialogs interface {
	DialogReader
	QuietDialogs()
}

// QuietDialogs marks Codex: 0.169.0 runs no hook of fleetd's when it asks
// for approval.
func (Codex) QuietDialogs() {}

// quietLook is how often a QuietDialogs agent at work is looked at.
const quietLook = time.Second

// ParseDialog reads Claude Code's dialogs (measured with 2.1.328): below
// a full-width rule, the dialog's title ("Bash command", "Create file"),
// what it is about (the command, the file; between dashed rules), the
// question ("Do you want to proceed?"), options numbered from 1 with "❯"
// at the selected one, and a footer "Esc to cancel · …". Typing an
// option's number chooses it at once.
func (Claude) ParseDialog(screen string) (Dialog, bool) {
	rows := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	footer := -1
	for i := len(rows) - 1; i >= 0 && i >= len(rows)-8; i-- {
		if strings.Contains(rows[i], "Esc to cancel") {
			footer = i
			break
		}
	}
	if footer < 0 {
		return Dialog{}, false
	}
	opts, first := numberedOptions(rows, footer, 40, "❯")
	if first < 0 {
		return Dialog{}, false
	}
	d := Dialog{Options: opts}
	// The question: the last row above the options that ends in "?".
	q := -1
	for i := first - 1; i >= 0 && i >= first-6; i-- {
		if t := strings.TrimSpace(rows[i]); strings.HasSuffix(t, "?") {
			d.Question, q = t, i
			break
		}
	}
	if q < 0 {
		return Dialog{}, false
	}
	// Title and detail: the rows from the full-width rule above down to
	// the question, without the dashed rules and Claude Code's tips.
	var about []string
	for i := q - 1; i >= 0 && i >= q-30; i-- {
		t := strings.TrimSpace(rows[i])
		if strings.HasPrefix(t, "────") {
			break
		}
		if t == "" || strings.HasPrefix(t, "╌╌╌╌") || strings.HasPrefix(t, "Tip:") {
			continue
		}
		about = append(about, t)
	}
	slices.Reverse(about)
	if len(about) > 0 {
		d.Title, about = about[0], about[1:]
	}
	d.Detail = strings.Join(about, "\n")
	return d, true
}

// unbox strips one level of a box's side borders off a row.
func unbox(row string) string {
	t := strings.TrimSpace(row)
	t, _ = strings.CutPrefix(t, "│")
	t, _ = strings.CutSuffix(t, "│")
	return strings.TrimSpace(t)
}

// ParseDialog reads Gemini CLI's confirmations (measured with 0.61.0):
// a box at the bottom of the screen, in the composer's place — its title
// row ("? Shell  touch x", "? WriteFile  Writing to notes.txt"), what it
// is about in a box of its own (the command, the file's lines), the
// question ("Allow execution of [Shell]?", "Apply this change?"), and
// options numbered from 1 with "●" at the selected one. Typing an
// option's number chooses it at once.
func (Gemini) ParseDialog(screen string) (Dialog, bool) {
	rows := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	bottom := len(rows) - 1
	for bottom >= 0 && strings.TrimSpace(rows[bottom]) == "" {
		bottom--
	}
	if bottom < 0 || !strings.HasPrefix(strings.TrimSpace(rows[bottom]), "╰") {
		return Dialog{}, false
	}
	var opts []string
	first := -1
	for i := bottom - 1; i >= 0 && i >= bottom-12 && first < 0; i-- {
		t := unbox(rows[i])
		if t == "" && len(opts) == 0 {
			continue
		}
		n, text, ok := optionRow(t, "●")
		if !ok {
			return Dialog{}, false
		}
		opts = append(opts, text)
		if n == 1 {
			first = i
		}
	}
	if first < 0 {
		return Dialog{}, false
	}
	slices.Reverse(opts)
	d := Dialog{Options: opts}
	q := -1
	for i := first - 1; i >= 0 && i >= first-4; i-- {
		if t := unbox(rows[i]); strings.HasSuffix(t, "?") {
			d.Question, q = t, i
			break
		}
	}
	if q < 0 {
		return Dialog{}, false
	}
	var about []string
	top := -1
	for i := q - 1; i >= 0 && i >= q-40; i-- {
		if strings.HasPrefix(strings.TrimSpace(rows[i]), "╭") {
			top = i
			break
		}
	}
	if top < 0 {
		return Dialog{}, false
	}
	for _, row := range rows[top+1 : q] {
		t := unbox(row)
		if t == "" || strings.HasPrefix(t, "╭") || strings.HasPrefix(t, "╰") {
			continue
		}
		about = append(about, unbox(t))
	}
	if len(about) > 0 {
		title, _ := strings.CutPrefix(about[0], "? ")
		d.Title, about = strings.Join(strings.Fields(title), " "), about[1:]
	}
	d.Detail = strings.Join(about, "\n")
	return d, true
}

// ParseDialog reads Codex's approval requests (measured with 0.169.0):
// at the bottom of the screen, the question ("Would you like to run the
// following command?"), what it is about (its environment, the reason the
// model gave, "$ " and the command), options numbered from 1 with "›" at
// the selected one, and "Press enter to confirm or esc to cancel". Typing
// an option's number chooses it at once.
func (Codex) ParseDialog(screen string) (Dialog, bool) {
	rows := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	footer := -1
	for i := len(rows) - 1; i >= 0 && i >= len(rows)-6; i-- {
		if strings.Contains(rows[i], "Press enter to confirm or esc to cancel") {
			footer = i
			break
		}
	}
	if footer < 0 {
		return Dialog{}, false
	}
	opts, first := numberedOptions(rows, footer, 30, "›")
	if first < 0 {
		return Dialog{}, false
	}
	d := Dialog{Options: opts}
	var about []string
	for i := first - 1; i >= 0 && i >= first-20; i-- {
		t := strings.TrimSpace(rows[i])
		if strings.HasSuffix(t, "?") {
			d.Question = t
			break
		}
		if t != "" {
			about = append(about, t)
		}
	}
	if d.Question == "" {
		return Dialog{}, false
	}
	slices.Reverse(about)
	d.Detail = strings.Join(about, "\n")
	return d, true
}

// ParseDialog reads OpenCode's permission requests (measured with
// 1.18.33): in the conversation's frame ("┃"), "△ Permission required",
// what it asks ("← Access external directory /var/tmp"), its patterns,
// and one row of options side by side ("Allow once   Allow always
// Reject") with the keys "⇆ select  enter confirm". The question is what
// it asks; the options carry no numbers (AnswerKeys).
func (OpenCode) ParseDialog(screen string) (Dialog, bool) {
	rows := strings.Split(strings.TrimRight(screen, "\n"), "\n")
	frame := func(r string) string {
		t := strings.TrimSpace(r)
		t, _ = strings.CutPrefix(t, "┃")
		return strings.TrimSpace(t)
	}
	keys := -1
	for i := len(rows) - 1; i >= 0 && i >= len(rows)-8; i-- {
		if strings.Contains(rows[i], "⇆ select") && strings.Contains(rows[i], "enter confirm") {
			keys = i
			break
		}
	}
	if keys < 0 {
		return Dialog{}, false
	}
	line := frame(rows[keys])
	if i := strings.Index(line, "ctrl+f"); i >= 0 {
		line = line[:i]
	} else if i := strings.Index(line, "⇆"); i >= 0 {
		line = line[:i]
	}
	var opts []string
	opts = splitOnGaps(line)
	title := -1
	for i := keys - 1; i >= 0 && i >= keys-30; i-- {
		if t := frame(rows[i]); strings.HasPrefix(t, "△") {
			title = i
			break
		}
	}
	if title < 0 || len(opts) < 2 {
		return Dialog{}, false
	}
	d := Dialog{Title: strings.TrimSpace(strings.TrimPrefix(frame(rows[title]), "△")), Options: opts}
	var about []string
	for _, r := range rows[title+1 : keys] {
		if t := frame(r); t != "" {
			about = append(about, t)
		}
	}
	if len(about) == 0 {
		return Dialog{}, false
	}
	d.Question = strings.TrimSpace(strings.TrimPrefix(about[0], "←"))
	d.Detail = strings.Join(about[1:], "\n")
	return d, true
}

// AnswerKeys chooses an OpenCode option by moving from the selected one
// (d.Selected; the first, where each request opens, when unknown) and
// confirming. It moves towards the option without going round the row's
// end: OpenCode wraps there, but a version that stops at the end would
// then be left on the wrong option.
func (OpenCode) AnswerKeys(d Dialog, option int) []string {
	from := max(d.Selected, 1)
	key, n := "right", option-from
	if n < 0 {
		key, n = "left", -n
	}
	keys := make([]string, 0, n+1)
	for range n {
		keys = append(keys, key)
	}
	return append(keys, "enter")
}

// Selected reads which of OpenCode's options is selected: the one drawn
// on the warning colour, the colour of the dialog's "△" (measured with
// 1.18.33); failing that, the one option of three or more whose
// background differs from all the others'.
func (OpenCode) Selected(styled string, d Dialog) (int, bool) {
	rows := strings.Split(strings.TrimRight(styled, "\n"), "\n")
	k := slices.IndexFunc(rows, func(r string) bool {
		t := cellText(styledCells(r))
		return strings.Contains(t, "⇆") && strings.Contains(t, "select")
	})
	if k < 0 {
		return 0, false
	}
	// The options' row: each option's background at its first letter.
	cells := styledCells(rows[k])
	text := cellText(cells)
	bgs := make([]string, 0, len(d.Options))
	at := 0
	for _, o := range d.Options {
		j := strings.Index(text[at:], o)
		if j < 0 || o == "" {
			return 0, false
		}
		bgs = append(bgs, cells[utf8.RuneCountInString(text[:at+j])].bg)
		at += j + len(o)
	}
	var mark string // the △'s colour, on a row above
	for i := k - 1; i >= 0 && mark == ""; i-- {
		cells := styledCells(rows[i])
		if t := cellText(cells); strings.Contains(t, "△") {
			mark = cells[utf8.RuneCountInString(t[:strings.Index(t, "△")])].fg
		}
	}
	return selectedOf(bgs, mark)
}

// selectedOf picks the option whose background is mark, or else the only
// one of three or more whose background is its own.
func selectedOf(bgs []string, mark string) (int, bool) {
	count := func(c string) int {
		n := 0
		for _, bg := range bgs {
			if bg == c {
				n++
			}
		}
		return n
	}
	if mark != "" && count(mark) == 1 {
		return slices.Index(bgs, mark) + 1, true
	}
	if len(bgs) < 3 {
		return 0, false
	}
	for i, bg := range bgs {
		if count(bg) == 1 && count(bgs[(i+1)%len(bgs)]) == len(bgs)-1 {
			return i + 1, true
		}
	}
	return 0, false
}

// optionRow reads a numbered option's row — "❯ 1. Yes", "   2. No",
// mark being the selection's sign before the selected one — as its number
// (1–9) and text. (Hand-read, not a regexp: every hook run of fleetd's
// initialises this package, and compiles nothing it does not use.)
func optionRow(row, mark string) (n int, text string, ok bool) {
	t := strings.TrimSpace(row)
	if rest, marked := strings.CutPrefix(t, mark); marked {
		t = strings.TrimLeft(rest, " ")
	}
	if len(t) < 4 || t[0] < '1' || t[0] > '9' || t[1] != '.' || t[2] != ' ' {
		return 0, "", false
	}
	text = strings.TrimSpace(t[3:])
	return int(t[0] - '0'), text, text != ""
}

// splitOnGaps splits a row of options laid side by side on runs of two or
// more spaces.
func splitOnGaps(line string) []string {
	var out []string
	for _, f := range strings.Split(strings.TrimSpace(line), "  ") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// numberedOptions reads a dialog's numbered options in the rows right
// above its footer row, up to within rows above it, up to option 1: each
// option's text (a long one wraps onto rows of its own, indented under its
// text, which join it) in order, and option 1's row; -1 when the rows
// above the footer are not such a list.
func numberedOptions(rows []string, footer, within int, mark string) (opts []string, first int) {
	var more []string // rows of a wrapped option below its start
	for i := footer - 1; i >= 0 && i >= footer-within; i-- {
		row := rows[i]
		n, text, isOption := optionRow(row, mark)
		switch {
		case strings.TrimSpace(row) == "":
		case isOption:
			slices.Reverse(more)
			opts = append(opts, strings.Join(append([]string{text}, more...), " "))
			more = nil
			if n == 1 {
				slices.Reverse(opts)
				return opts, i
			}
		case strings.HasPrefix(row, "     "):
			more = append(more, strings.TrimSpace(row))
		default:
			return nil, -1
		}
	}
	return nil, -1
}

// dialogRetry is how often a blocked agent's screen is read again while
// no dialog shows on it (the hook that says blocked can come before the
// dialog is drawn); dialogTries bounds the reads of one blocked spell.
const (
	dialogRetry = 300 * time.Millisecond
	dialogTries = 10
	// answerWait bounds the wait for an answered dialog to leave the
	// screen.
	answerWait = 5 * time.Second
)

// DialogPolicy is who answers a dialog by its role's deny_dialogs_after.
const DialogPolicy = "policy"

// answerRequest is an AgentAnswer waiting to be typed.
type answerRequest struct {
	option int
	by     string
}

// dialogs is the dialog duty of one step for agent id: type an answer
// asked for, or read the dialog of an agent blocked on one and record it.
// Only a kind that is a DialogReader has it.
func (b *Bridge) dialogs(ctx context.Context, id string) {
	now := b.cfg.Now()
	b.mu.Lock()
	a := b.agents[id]
	reader, ok := a.kind().(DialogReader)
	if !ok || !b.ownedLocked(a) || b.herdr != linkUp || a.exited {
		b.mu.Unlock()
		return
	}
	pane, req, open, openAt, role := a.pane, a.answer, a.dialog, a.dialogAt, a.role
	blocked := a.hookStatus == events.StatusBlocked || (a.fresh && a.status == herdrapi.StatusBlocked)
	_, quiet := reader.(QuietDialogs)
	t, inFlight := b.book.InFlight(id)
	working := quiet && open == nil && inFlight && t.State == lifecycle.StateSubmitted
	look := req == nil && !now.Before(a.dialogLookAt) && (working || (blocked && a.dialogTries < dialogTries))
	if look {
		a.dialogTries++
		a.dialogLookAt = now.Add(dialogRetry)
		if working {
			a.dialogLookAt = now.Add(quietLook)
		}
	}
	deny := 0
	if req == nil && open != nil && !a.dialogPolicy {
		if r, err := b.cfg.Roles.Get(role); err == nil && r.DenyDialogsAfter > 0 && now.Sub(openAt) >= time.Duration(r.DenyDialogsAfter) {
			deny = slices.IndexFunc(open.Options, denies) + 1
			a.dialogPolicy = true // once per dialog, whatever comes of it
		}
	}
	b.mu.Unlock()
	switch {
	case deny > 0:
		// The role's policy answers a dialog left unanswered: through
		// the log, as anyone's answer, so it is typed and recorded the
		// same way.
		if _, err := b.append(ctx, id, "", events.AgentAnswer{Option: deny, By: DialogPolicy}); err != nil {
			b.log.Warn("policy answer not recorded", "agent", id, "err", err)
		}
	case req != nil:
		b.answerDialog(ctx, id, pane, reader, *req)
	case look:
		r, err := b.client.Read(ctx, herdrapi.ReadRequest{PaneID: pane, Source: herdrapi.SourceVisible})
		if err != nil {
			return
		}
		d, ok := reader.ParseDialog(r.Text)
		if !ok || (open != nil && open.Same(d)) {
			return
		}
		b.mu.Lock()
		a.dialogTries = dialogTries // found: no more looks this spell
		b.mu.Unlock()
		if working && !blocked {
			// Nothing else says so: the agent waits for a person.
			if _, err := b.append(ctx, id, "", events.AgentStatusChanged{Status: events.StatusBlocked, Source: StatusSourceScreen,
				Detail: d.Question}); err != nil {
				b.log.Warn("status not recorded", "agent", id, "err", err)
			}
		}
		if _, err := b.append(ctx, id, "", events.AgentDialog{State: events.DialogOpen, Title: d.Title, Question: d.Question,
			Detail: d.Detail, Options: d.Options}); err != nil {
			b.log.Warn("dialog not recorded", "agent", id, "err", err)
		}
	}
}

// answerDialog types option req.option into the dialog on the agent's
// screen and records how it went: answered once the dialog left the
// screen, unanswered (saying why) when there is no dialog, no such
// option, or the dialog stayed. Nothing is typed unless the screen shows
// a dialog with that option the moment before. An answer whose option
// says No ends the agent's turn in flight as denied, before the key goes:
// Claude Code stops the turn ("Interrupted") and no Stop hook comes for
// it; OpenCode ends it at once, with nothing.
func (b *Bridge) answerDialog(ctx context.Context, id, pane string, reader DialogReader, req answerRequest) {
	unanswered := func(why string) {
		if _, err := b.append(ctx, id, "", events.AgentDialog{State: events.DialogUnanswered, Answer: req.option, By: req.by, Message: why}); err != nil {
			b.log.Warn("dialog answer not recorded", "agent", id, "err", err)
		}
	}
	r, err := b.client.Read(ctx, herdrapi.ReadRequest{PaneID: pane, Source: herdrapi.SourceVisible})
	if err != nil {
		unanswered("the agent's screen could not be read: " + err.Error())
		return
	}
	d, ok := reader.ParseDialog(r.Text)
	switch {
	case !ok:
		unanswered("no dialog on the agent's screen")
		return
	case req.option > len(d.Options):
		unanswered(fmt.Sprintf("no option %d: the dialog has %d", req.option, len(d.Options)))
		return
	}
	if sr, ok := reader.(SelectionReader); ok {
		styled, err := b.client.Read(ctx, herdrapi.ReadRequest{PaneID: pane, Source: herdrapi.SourceVisible, Format: herdrapi.FormatANSI, KeepANSI: true})
		if err != nil {
			unanswered("the agent's screen could not be read: " + err.Error())
			return
		}
		sel, ok := sr.Selected(styled.Text, d)
		if !ok {
			// Keys moved from a selection guessed could choose another
			// option than the one asked for: type nothing.
			unanswered("which option the dialog has selected cannot be read off the agent's screen")
			return
		}
		d.Selected = sel
	}
	label := d.Options[req.option-1]
	if denies(label) {
		// The turn is denied before the key goes: a CLI that ends the
		// turn on its own at once (OpenCode's Stop comes within a
		// moment of a Reject) would otherwise record it replied, with
		// nothing, and the lead would not hear it was refused.
		b.mu.Lock()
		t, ok := b.book.InFlight(id)
		b.mu.Unlock()
		if ok && t.State == lifecycle.StateSubmitted {
			b.fail(ctx, id, t.ID, events.ReasonDenied, fmt.Sprintf("%s answered %q to %q (%s)", req.by, label, d.Question, oneLine(d.Title, d.Detail)))
		}
	}
	if err := b.client.SendKeys(ctx, pane, answerKeys(reader, d, req.option)...); err != nil {
		unanswered("typing the answer failed: " + err.Error())
		return
	}
	deadline := b.cfg.Now().Add(answerWait)
	for {
		r, err := b.client.Read(ctx, herdrapi.ReadRequest{PaneID: pane, Source: herdrapi.SourceVisible})
		if err == nil {
			if now, ok := reader.ParseDialog(r.Text); !ok || !now.Same(d) {
				break
			}
		}
		if ctx.Err() != nil {
			return
		}
		if b.cfg.Now().After(deadline) {
			unanswered(fmt.Sprintf("the dialog stayed on screen %s after %d was typed", answerWait, req.option))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := b.append(ctx, id, "", events.AgentDialog{State: events.DialogAnswered, Title: d.Title, Question: d.Question,
		Detail: d.Detail, Options: d.Options, Answer: req.option, By: req.by}); err != nil {
		b.log.Warn("dialog answer not recorded", "agent", id, "err", err)
	}
	b.log.Info("dialog answered", "agent", id, "option", req.option, "label", label, "by", req.by)
	if !denies(label) {
		if _, quiet := reader.(QuietDialogs); quiet {
			// The blocked status was the screen's word: the agent works
			// on, which its next hook will say only at the turn's end.
			if _, err := b.append(ctx, id, "", events.AgentStatusChanged{Status: events.StatusWorking, Source: StatusSourceScreen,
				Detail: "the dialog was answered " + label}); err != nil {
				b.log.Warn("status not recorded", "agent", id, "err", err)
			}
		}
		return
	}
	// No hook reports the stopped turn, and the last one said blocked;
	// herdr holds a hook's word over its own screen detection until the
	// next report, which no hook sends now. The dialog is gone from the
	// screen: the agent waits for no one. (The next turn is typed only
	// once the prompt box is back, as always: Gemini CLI keeps a row of
	// its hooks up for seconds after a denial.)
	b.mu.Lock()
	kind := b.agents[id].kind()
	b.mu.Unlock()
	if err := b.client.ReportAgent(ctx, herdrapi.ReportAgentRequest{PaneID: pane, Source: "fleetd:" + kind.Name(), Agent: kind.Name(),
		State: herdrapi.StatusIdle, Seq: uint64(time.Now().UnixNano())}); err != nil {
		b.log.Warn("herdr not told the agent is idle", "agent", id, "err", err)
	}
	if _, err := b.append(ctx, id, "", events.AgentStatusChanged{Status: events.StatusIdle, Source: StatusSourceScreen,
		Detail: "the dialog was answered " + label + ": the turn stopped"}); err != nil {
		b.log.Warn("status not recorded", "agent", id, "err", err)
	}
}

// denies reports an option that refuses what the dialog asks: "No…"
// (Claude Code, Gemini CLI, Codex), "Reject" (OpenCode), "Deny".
func denies(label string) bool {
	l := strings.ToLower(label)
	for _, w := range []string{"no", "reject", "deny"} {
		if l == w || strings.HasPrefix(l, w+",") || strings.HasPrefix(l, w+" ") {
			return true
		}
	}
	return false
}

// oneLine joins a dialog's title and detail for a message.
func oneLine(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p = strings.Join(strings.Fields(p), " "); p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, ": ")
}
