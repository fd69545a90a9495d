package claudehook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	// events' pure half (see append.go), under its usual name.
	events "github.com/fleetd/fleetd/events/eventcore"
	"github.com/fleetd/fleetd/worktree"
)

// ReasonAgentError is AgentFailed.Reason when Claude Code ended a turn with
// StopFailure (an API error, as the agent saw it).
const ReasonAgentError = "agent_error"

// Options tune a hook run. The zero value is what `fleetd hook` uses.
type Options struct {
	// Timeout bounds the whole run: replay, connect, lookups, appends.
	// Default 2 s (Claude's own limit on a hook is 10 s).
	Timeout time.Duration
	// ConnectTimeout bounds the NATS dial. Default 300 ms.
	ConnectTimeout time.Duration
	// HerdrTimeout bounds the first attempt of the herdr report; a failed
	// attempt is retried with twice the bound, within Timeout. Default
	// 300 ms.
	HerdrTimeout time.Duration
	// NoHerdr skips the pane.report_agent request.
	NoHerdr bool
	// NoReplay skips replaying the spool before appending.
	NoReplay bool
	// MaxPayload caps the stdin read. Default 8 MiB.
	MaxPayload int64
	// MaxTranscript caps the transcript tail read. Default 4 MiB.
	MaxTranscript int64
	// TranscriptWait bounds how long a Stop hook waits for the turn's
	// final assistant message to reach the transcript. Default 1 s.
	TranscriptWait time.Duration
	// Detach, when set, lets a Stop hook whose transcript does not show
	// the turn's end within QuickWait hand the payload to a detached
	// finisher (Detach's job: e.g. re-exec `fleetd hook stop --finish`)
	// and exit at once. Claude Code may write the reply's transcript line
	// only after its hooks return, so waiting inside the hook can never
	// see it; the finisher can. If Detach fails, the hook goes on itself.
	Detach func(payload []byte) error
	// QuickWait is how long a hook with Detach waits before detaching,
	// for a kind whose reply is read from the transcript. Default 200 ms.
	// A kind whose payload carries the reply whole waits for nothing: its
	// reply goes at once, usage pending, and its finisher (DetachUsage)
	// appends the usage.
	QuickWait time.Duration
	// DetachUsage hands a Stop hook's payload, once its reply is
	// appended usage pending, to a detached finisher that appends the
	// turn's usage event (UsageOnly) when the transcript shows it.
	DetachUsage func(payload []byte) error
	// UsageOnly: this run is a DetachUsage finisher's; a Stop hook
	// appends only the turn's usage event, when its transcript has one.
	UsageOnly bool
	// AfterPrompt: this hook follows a UserPromptSubmit hook the agent
	// ran without waiting for it (Claude Code's async hook); it appends
	// and reports nothing before that hook is done (order.go).
	AfterPrompt bool
	// PromptWait bounds the AfterPrompt wait. Default 1 s.
	PromptWait time.Duration
	// Stderr receives notes (spooled, replayed, herdr trouble). Default
	// io.Discard.
	Stderr io.Writer
	// Now and NewID are the clock and id source; defaults time.Now and
	// monotonic ULIDs.
	Now   func() time.Time
	NewID func() string

	// ordered returns once this hook may append or report (AfterPrompt),
	// having given the events it is passed ids after the prompt's.
	ordered func(evs []events.Event)
}

func (o *Options) setDefaults() {
	setDur(&o.Timeout, 2*time.Second)
	setDur(&o.ConnectTimeout, 300*time.Millisecond)
	setDur(&o.HerdrTimeout, 300*time.Millisecond)
	setDur(&o.TranscriptWait, time.Second)
	setDur(&o.QuickWait, 200*time.Millisecond)
	setDur(&o.PromptWait, time.Second)
	if o.MaxPayload <= 0 {
		o.MaxPayload = 8 << 20
	}
	if o.MaxTranscript <= 0 {
		o.MaxTranscript = DefaultMaxTranscript
	}
	if o.Stderr == nil {
		o.Stderr = io.Discard
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewID == nil {
		o.NewID = events.NewULIDSource(o.Now)
	}
}

func setDur(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

// Run is one hook invocation: event is the hook name (either spelling),
// stdin Claude's payload, env the pane's environment. It appends the
// hook's events to NATS, or spools them when NATS is out of reach, and
// returns nil in both cases. It returns ErrNoAgent outside a fleetd pane,
// ErrUnknownHook, ErrPayload, or ErrSpool when the events are lost. The
// caller prints any error and exits 0 regardless: a hook must never block
// the agent.
func Run(ctx context.Context, event string, stdin io.Reader, env func(string) string, o Options) error {
	o.setDefaults()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	hook, err := ParseHook(event)
	if err != nil {
		return err
	}
	agent := env("FLEET_AGENT_ID")
	if agent == "" {
		return ErrNoAgent
	}
	if err := events.ValidAgentID(agent); err != nil {
		return fmt.Errorf("claudehook: FLEET_AGENT_ID: %w", err)
	}
	raw, err := io.ReadAll(io.LimitReader(stdin, o.MaxPayload))
	if err != nil {
		return fmt.Errorf("%w: read stdin: %v", ErrPayload, err)
	}
	p, err := ParsePayload(raw)
	if err != nil {
		return err
	}

	// The agent's CLI (the pane's FLEET_KIND, set at spawn): the hooks of
	// Codex carry Claude Code's names and fields, but its transcript is
	// its own.
	kind := env("FLEET_KIND")
	if kind == "" {
		kind = "claude"
	}
	o.ordered = func([]events.Event) {}
	after := o.AfterPrompt && hook != UserPromptSubmit && p.PromptID != ""
	if after {
		wait := sync.OnceValue(func() string {
			last, done := awaitPrompt(ctx, SpoolDir(env), agent, p.PromptID, o.PromptWait, o.Stderr)
			if !done && (hook == Stop || hook == StopFailure) {
				// The turn ends without its prompt's hook: should that
				// hook come after all, it must not say working.
				markEnded(SpoolDir(env), agent, p.PromptID, o.Stderr)
			}
			return last
		})
		o.ordered = func(evs []events.Event) {
			idsAfter(evs, wait())
			// Timed once the prompt's events are made, too: the views
			// order an agent's statuses by their time, and this hook
			// may have made its events before the prompt's hook made
			// its own (both run at once on a fast turn).
			now := o.Now()
			for i := range evs {
				evs[i].Time = now
			}
		}
	}
	var wg sync.WaitGroup
	if state := herdrState(hook, p); state != "" && !o.NoHerdr {
		if sock, pane := env("HERDR_SOCKET_PATH"), env("HERDR_PANE_ID"); sock != "" && pane != "" {
			// herdr keeps the report with the highest seq (the clock)
			// of a source. A prompt hook's is taken here, before its
			// mark; a later hook's once the mark is there: so the
			// prompt's "working", however late it lands, never
			// outranks the Stop's "idle".
			seq := uint64(o.Now().UnixNano())
			wg.Go(func() {
				if hook == UserPromptSubmit && ended(SpoolDir(env), agent, p.PromptID) {
					// Looked at after seq was taken: a Stop that gave up
					// waiting marks the end before it takes its own, so
					// either this sees the mark or the Stop's idle
					// outranks this working.
					return
				}
				if after {
					o.ordered(nil)
					seq = uint64(o.Now().UnixNano())
				}
				if err := reportHerdrRetry(ctx, sock, pane, kind, state, o.HerdrTimeout, seq); err != nil {
					fmt.Fprintf(o.Stderr, "fleetd hook: herdr report (ignored): %v\n", err)
				}
			})
		}
	}
	defer wg.Wait()
	// lastID is the last event this hook made, for the prompt's mark.
	var lastID string
	if hook == UserPromptSubmit && p.PromptID != "" {
		// Deferred after wg.Wait, so it runs before it: once the appends
		// are done (or spooled), not herdr's answer, which the seq above
		// orders.
		defer func() { markPrompt(SpoolDir(env), agent, p.PromptID, lastID, o.Stderr) }()
	}

	var usage Usage
	// Usage is read from the agent's transcript: Claude Code's, or
	// Codex's rollout file; another kind's is not read.
	transcript := p.TranscriptPath
	read := usageReaders[kind]
	if read == nil {
		transcript = ""
	}
	// pending: the reply goes now, without its usage, which the
	// transcript does not show yet; a detached finisher appends it.
	var pending bool
	if hook == Stop && transcript != "" && o.Detach != nil && !o.UsageOnly {
		quick := o
		quick.TranscriptWait, quick.Stderr = o.QuickWait, io.Discard
		now := p.LastAssistantMessage != "" && !replyInTranscript[kind] && o.DetachUsage != nil
		if now {
			// One look, no wait: Claude Code may write the turn's usage
			// only after its hooks return, and the reply is in the
			// payload whole.
			quick.TranscriptWait = time.Nanosecond
		}
		if u, err := waitUsage(ctx, read, transcript, p.PromptID, quick); (err == nil && !u.Ended) || errors.Is(err, fs.ErrNotExist) {
			if now {
				pending = true
			} else if derr := o.Detach(raw); derr == nil {
				fmt.Fprintf(o.Stderr, "fleetd hook: the transcript has not shown the reply yet; a detached finisher will append it with its usage\n")
				return nil
			} else {
				fmt.Fprintf(o.Stderr, "fleetd hook: detach (going on here): %v\n", derr)
			}
		} else if now {
			usage = u
		}
	}
	h := hookRun{agent: agent, host: hostToken(env), pane: env("HERDR_PANE_ID"), now: o.Now, newID: o.NewID}
	var inspected chan struct{}
	if path := env("FLEET_WORKTREE"); hook == Stop && path != "" && !o.UsageOnly {
		// Where the agent's branch stands after the turn, read while the
		// transcript is awaited.
		inspected = make(chan struct{})
		go func() {
			defer close(inspected)
			h.worktree = inspectWorktree(ctx, path, env("FLEET_WORKTREE_BASE"), o.Stderr)
		}()
	}
	if hook == Stop && transcript != "" && !pending && !usage.Ended {
		if usage, err = waitUsage(ctx, read, transcript, p.PromptID, o); err != nil {
			fmt.Fprintf(o.Stderr, "fleetd hook: no usage for the reply: %v\n", err)
		}
		if usage.Reply != "" {
			p.LastAssistantMessage = usage.Reply
		}
	}
	if inspected != nil {
		<-inspected
	}
	if o.UsageOnly {
		if hook != Stop || usage.Tokens == (events.Tokens{}) && usage.CostUSD == 0 {
			return nil
		}
		return deliver(ctx, []events.Event{h.event(events.AgentUsage{PromptID: p.PromptID, SessionID: p.SessionID,
			Model: usage.Model, Tokens: usage.Tokens, CostUSD: usage.CostUSD})}, env, o)
	}
	evs := h.build(hook, p, usage)
	if hook == UserPromptSubmit && ended(SpoolDir(env), agent, p.PromptID) {
		// The prompt's hook came after its turn ended (the Stop gave
		// up waiting for it): the prompt is recorded, but not a working
		// status, which would outlast the turn. Looked at after the
		// events were timed, as the Stop marks the end before it times
		// its own: either this sees the mark or the Stop's idle is
		// the later.
		evs = slices.DeleteFunc(evs, func(ev events.Event) bool {
			_, status := ev.Data.(events.AgentStatusChanged)
			return status
		})
	}
	if pending && len(evs) > 0 {
		if r, ok := evs[0].Data.(events.AgentReplied); ok {
			r.UsagePending = true
			evs[0].Data = r
		}
	}
	if len(evs) == 0 {
		return nil
	}
	lastID = evs[len(evs)-1].ID
	err = deliver(ctx, evs, env, o)
	if pending {
		// After the reply is stored (or spooled): its usage joins a
		// reply the views already have.
		if derr := o.DetachUsage(raw); derr != nil {
			fmt.Fprintf(o.Stderr, "fleetd hook: the turn's usage will not be counted: %v\n", derr)
		}
	}
	return err
}

// replyInTranscript are the kinds whose Stop payload may not carry the
// reply whole (Gemini CLI's): their hook waits for the transcript.
var replyInTranscript = map[string]bool{"gemini": true}

// waitUsage reads the turn's usage once the transcript shows the turn
// ended, or after o.TranscriptWait with what is there by then. Claude Code
// 2.1.328 runs the Stop hook while its transcript write of the reply may
// still be pending; read at once, a busy machine often saw no usage at all.
// A transcript that is not there yet is pending too, for up to
// missingTranscriptWait: Claude Code makes the file with a session's first
// write, which on a loaded machine came after the first turn's Stop hook
// ran (that turn then had no usage).
// usageReader reads a turn's usage from a transcript's tail (ReadUsage,
// ReadCodexUsage).
type usageReader func(path, promptID string, maxBytes int64) (Usage, error)

// usageReaders are the transcript readers by kind (the pane's
// FLEET_KIND); a kind without one records no usage from a transcript.
// A further kind adds its own from its file's init func.
var usageReaders = map[string]usageReader{"claude": ReadUsage, "codex": ReadCodexUsage}

func waitUsage(ctx context.Context, read usageReader, path, promptID string, o Options) (Usage, error) {
	timeout := time.NewTimer(o.TranscriptWait)
	defer timeout.Stop()
	start := time.Now()
	for {
		u, err := read(path, promptID, o.MaxTranscript)
		switch {
		case errors.Is(err, fs.ErrNotExist) && time.Since(start) < missingTranscriptWait:
			// Not written yet: wait for it as for a late line.
		case err != nil || u.Ended:
			return u, err
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-timeout.C:
			if err != nil {
				return u, err // still no transcript
			}
			fmt.Fprintf(o.Stderr, "fleetd hook: the transcript did not show the turn's end within %v (prompt found: %v); usage may be short\n",
				o.TranscriptWait, u.Found)
			return u, nil
		case <-ctx.Done():
			return u, nil
		}
	}
}

// missingTranscriptWait bounds the wait for a transcript file that does
// not exist: one that never comes (a session that keeps none) costs each
// reply this much, not the whole TranscriptWait.
const missingTranscriptWait = time.Second

// deliver appends evs (after replaying the spool) or spools what is left.
func deliver(ctx context.Context, evs []events.Event, env func(string) string, o Options) error {
	spool := SpoolDir(env)
	done, err := appendAll(ctx, evs, env, spool, o)
	if err == nil {
		return nil
	}
	if o.ordered != nil && done == 0 {
		o.ordered(evs) // (once) after the prompt's, in the spool too
	}
	if serr := Spool(spool, evs[done:]); serr != nil {
		return errors.Join(serr, err)
	}
	fmt.Fprintf(o.Stderr, "fleetd hook: NATS unavailable (%v); spooled %d event(s) to %s\n", err, len(evs)-done, spool)
	return nil
}

// hostToken is FLEET_HOST, else the machine's name, as a subject token.
func hostToken(env func(string) string) string {
	h := env("FLEET_HOST")
	if h == "" {
		h, _ = os.Hostname()
	}
	return events.HostToken(h)
}

// hookRun builds one hook's events.
type hookRun struct {
	agent, host, pane string
	now               func() time.Time
	newID             func() string
	// worktree is where the agent's branch stands (a Stop of an agent
	// with a worktree).
	worktree events.Worktree
}

// inspectWorktree reads the agent's worktree for its reply: branch,
// head, uncommitted files, commits ahead of base. What cannot be read is
// left out (and said on stderr): the reply goes anyway.
func inspectWorktree(ctx context.Context, path, base string, stderr io.Writer) events.Worktree {
	st, err := worktree.Inspect(ctx, path, base)
	if err != nil {
		fmt.Fprintf(stderr, "fleetd hook: worktree %s: %v\n", path, err)
	}
	return events.Worktree{Branch: st.Branch, Head: st.Head, Dirty: st.Dirty, Ahead: st.Ahead}
}

func (h hookRun) event(d events.Data) events.Event {
	return events.Event{ID: h.newID(), Source: "fleetd/" + h.host + "/hook", Subject: h.agent, Time: h.now(), Data: d}
}

func (h hookRun) status(s events.Status, detail string) events.Event {
	return h.event(events.AgentStatusChanged{Status: s, Source: "hook", Pane: h.pane, Detail: detail})
}

// build maps a hook to its events (DESIGN.md's Hooks convention).
func (h hookRun) build(hook Hook, p Payload, u Usage) []events.Event {
	switch hook {
	case SessionStart:
		return []events.Event{
			h.event(events.AgentSession{SessionID: p.SessionID, State: "started", Source: p.Source,
				TranscriptPath: p.TranscriptPath, Model: p.Model, Cwd: p.Cwd}),
			h.status(events.StatusIdle, "session "+p.Source),
		}
	case UserPromptSubmit:
		return []events.Event{
			h.event(events.AgentSubmitted{Via: "hook", PromptID: p.PromptID, SessionID: p.SessionID, Prompt: fitText(p.Prompt)}),
			h.status(events.StatusWorking, "prompt submitted"),
		}
	case Stop:
		return []events.Event{
			h.event(events.AgentReplied{Reply: fitText(p.LastAssistantMessage), PromptID: p.PromptID, SessionID: p.SessionID,
				Model: u.Model, Tokens: u.Tokens, CostUSD: u.CostUSD, Transcript: p.TranscriptPath, Worktree: h.worktree}),
			h.status(events.StatusIdle, "turn over"),
		}
	case StopFailure:
		msg := p.LastAssistantMessage
		if e := p.ErrorText(); e != "" && msg == "" {
			msg = e
		} else if e != "" {
			msg = e + ": " + msg
		}
		return []events.Event{
			h.event(events.AgentFailed{Reason: ReasonAgentError, Message: fitText(msg)}),
			h.status(events.StatusIdle, "turn failed"),
		}
	case Notification:
		if !blocking(p) {
			return nil
		}
		detail := p.NotificationType
		if p.Message != "" {
			detail = detail + ": " + p.Message
		}
		return []events.Event{h.status(events.StatusBlocked, fitText(detail))}
	case SessionEnd:
		return []events.Event{h.event(events.AgentSession{SessionID: p.SessionID, State: "ended", Reason: p.Reason,
			TranscriptPath: p.TranscriptPath, Cwd: p.Cwd})}
	}
	return nil
}

// fitText keeps s within what an event's free-text field holds
// (events.DefaultTextLimit). A longer reply would be refused by the log —
// readers skip an event over its limits — and its turn would never end; so
// it is cut on a UTF-8 boundary, with a note of how much was left out (the
// transcript keeps the whole text).
func fitText(s string) string {
	limit := events.DefaultTextLimit
	if len(s) <= limit {
		return s
	}
	note := func(n int) string {
		return fmt.Sprintf("\n[fleetd: %d more bytes cut here; the transcript has the whole text]", n)
	}
	cut := limit - len(note(len(s)))
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + note(len(s)-cut)
}

// blocking reports whether a Notification means the agent waits for a
// person. Claude also notifies when a prompt has sat idle (idle_prompt) or
// a login succeeded; neither blocks a turn, and calling an idle agent
// blocked would stop deliveries to it.
func blocking(p Payload) bool {
	switch p.NotificationType {
	case "idle_prompt", "auth_success":
		return false
	}
	return true
}
