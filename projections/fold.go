package projections

import (
	"context"
	"errors"
	"hash/maphash"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/lifecycle"
)

// Session states.
const (
	SessionActive = "active"
	SessionEnded  = "ended"
	SessionClosed = "closed"
)

// recentIDs is how many event ids each agent remembers to drop re-appended
// duplicates (a hook spool replayed after the stream's dedupe window).
const recentIDs = 64

// agentRow is an agent's fold state: its roster row plus what the fold
// needs to stay idempotent. A row exists before its agent registers (a
// hook may beat the registration); it is listed and written only once
// Registered.
type agentRow struct {
	Agent
	Registered bool      `json:"registered,omitempty"`
	StatusAt   time.Time `json:"status_at,omitzero"`
	Recent     []string  `json:"recent,omitempty"`
	Next       int       `json:"next,omitempty"`
	// recentSums are the hashes of Recent, slot for slot: two of every
	// turn's four events are looked up in Recent, and comparing 64 ids
	// (ULIDs of one host share their first bytes) was a sixth of the
	// fold. Not stored: rebuilt from Recent when they disagree in length
	// (a row from a checkpoint).
	recentSums []uint64
	// Usage is the agent's usage in rolling windows (Views.Usage).
	Usage *usage `json:"usage,omitempty"`
	// awaitingUsage are the agent's replied turns whose usage event has
	// not come, oldest first, at most maxAwaitingUsage (a finisher that
	// has not appended it by then is gone). Not stored: the ended turns
	// it names are in the cache, which a checkpoint does not keep.
	awaitingUsage []string
}

// maxAwaitingUsage bounds agentRow.awaitingUsage.
const maxAwaitingUsage = 8

// seen reports whether the event id was already applied to the agent, and
// remembers it if not.
func (a *agentRow) seen(id string) bool {
	if len(a.recentSums) != len(a.Recent) {
		a.recentSums = make([]uint64, len(a.Recent), recentIDs)
		for i, r := range a.Recent {
			a.recentSums[i] = idSum(r)
		}
	}
	sum := idSum(id)
	for i, s := range a.recentSums {
		if s == sum && a.Recent[i] == id {
			return true
		}
	}
	// A copy: the id shares its memory with the rest of its event's
	// envelope (eventcore decodes them as one string), and 64 ids an
	// agent kept 64 envelopes alive, a fifth of a rebuild's live heap
	// with a thousand agents.
	id = strings.Clone(id)
	if len(a.Recent) < recentIDs {
		a.Recent = append(a.Recent, id)
		a.recentSums = append(a.recentSums, sum)
		return false
	}
	a.Recent[a.Next] = id
	a.recentSums[a.Next] = sum
	a.Next = (a.Next + 1) % recentIDs
	return false
}

// recentSeed seeds idSum. A hash only narrows the search (a match is
// confirmed on the id), so any seed will do.
var recentSeed = maphash.MakeSeed()

// idSum is an event id's hash for agentRow.seen.
func idSum(id string) uint64 { return maphash.String(recentSeed, id) }

// sessionRow is a session's fold state.
type sessionRow struct {
	Session
	StateAt time.Time `json:"state_at,omitzero"`
}

// hostRow is a host's liveness as its up, heartbeat and down events tell.
type hostRow struct {
	LastBeat time.Time `json:"last_beat,omitzero"`
	LastAt   time.Time `json:"last_at,omitzero"`
	Down     bool      `json:"down,omitempty"`
	Stale    bool      `json:"stale,omitempty"`
	// Unheard: agents were registered for the host but it never announced
	// itself; LastBeat is then the first registration, the start of its
	// grace (HostTTL) to come up.
	Unheard bool `json:"unheard,omitempty"`
	// JudgedAt is when a router released a turn from one of the host's
	// agents because the host went silent (events.ReasonHostStale), and
	// no newer heartbeat of the host came after that in the log. Every
	// fold then holds it stale from that point of the log, whatever its
	// own clock says: each gateway judges silence by its own clock and
	// sweep, and a fold a moment behind would see the agent free again
	// and give it the very turn just taken from it.
	JudgedAt time.Time `json:"judged_at,omitzero"`
}

// state is everything the fold knows.
type state struct {
	agents   map[string]*agentRow
	sessions map[string]*sessionRow
	hosts    map[string]*hostRow
	// roles is each role's usage: the sum of its agents' replies.
	roles map[string]*usage
	book  *lifecycle.Book
	// logTime is the newest event time folded: how far the fold has
	// heard the fleet. A host is judged silent against it as well as
	// against the clock, so a fold that hears nothing (its reader lost
	// with a cluster member, being made again) does not call every host
	// stale: in a live fleet every gateway's heartbeat moves it.
	logTime time.Time
}

func newState() *state {
	return &state{agents: map[string]*agentRow{}, sessions: map[string]*sessionRow{}, hosts: map[string]*hostRow{},
		roles: map[string]*usage{}, book: lifecycle.NewBook()}
}

// roleUsage is role's usage, created on first use.
func (st *state) roleUsage(role string) *usage {
	u, ok := st.roles[role]
	if !ok {
		u = &usage{}
		st.roles[role] = u
	}
	return u
}

// usage is the agent's usage, created on first use.
func (a *agentRow) usage() *usage {
	if a.Usage == nil {
		a.Usage = &usage{}
	}
	return a.Usage
}

// dirtySet is what changed since the last write to KV.
type dirtySet struct {
	agents   map[string]struct{}
	sessions map[string]struct{}
	turns    map[string]lifecycle.Turn
	// ended counts the turns that ended: between checkpoints a catch-up
	// writes only those (see collect), so they decide when it flushes.
	ended int
}

// turn marks t changed.
func (d *dirtySet) turn(t lifecycle.Turn) {
	if t.State.Final() {
		if was, ok := d.turns[t.ID]; !ok || !was.State.Final() {
			d.ended++
		}
	}
	d.turns[t.ID] = t
}

func newDirtySet() dirtySet {
	return dirtySet{agents: map[string]struct{}{}, sessions: map[string]struct{}{}, turns: map[string]lifecycle.Turn{}}
}

// newDirtySetLike is an empty dirty set sized for about as many changes
// as d held: the next flush's are alike, and a map grown from nothing
// each flush was most of what the dirty set allocated.
// The hint is capped at a catch-up's flush, so the big last flush of a
// rebuild leaves no big empty map behind for the live fold.
func newDirtySetLike(d dirtySet) dirtySet {
	hint := func(n int) int { return min(n, batchSize*bulkSpread) }
	return dirtySet{
		agents:   make(map[string]struct{}, hint(len(d.agents))),
		sessions: make(map[string]struct{}, hint(len(d.sessions))),
		turns:    make(map[string]lifecycle.Turn, hint(len(d.turns))),
	}
}

func (d dirtySet) len() int { return len(d.agents) + len(d.sessions) + len(d.turns) }

// batch is one fold step's scratch: turns looked up in KV beforehand and
// the changes to announce.
type batch struct {
	stored  map[string]lifecycle.Turn
	changes []Change
	seq     uint64
}

// fold applies evs in order. KV lookups happen first, outside the lock.
func (m *materializer) fold(ctx context.Context, evs []events.Event) error {
	if len(evs) == 0 {
		return nil
	}
	// The changes go to notify, which keeps none of them: the slice is
	// this materializer's, used again by the next fold.
	b := &batch{changes: m.changeBuf[:0]}
	defer func() { m.changeBuf = b.changes[:0] }()
	if err := m.prefetch(ctx, evs, b); err != nil {
		return err
	}
	m.mu.Lock()
	for _, ev := range evs {
		b.seq = ev.Seq
		if ev.Skipped() {
			// Junk: nothing to fold, but the position moves past it, so
			// WaitSeq(the log's end) holds when the last message is junk.
			continue
		}
		m.apply(ev, b)
	}
	if len(b.changes) > 0 {
		m.version.Add(1)
	}
	m.mu.Unlock()
	m.sinceCkpt += len(evs)
	m.setApplied(evs[len(evs)-1].Seq)
	if len(b.changes) > 0 {
		m.notify(b.changes)
	}
	return nil
}

// prefetch reads from the turns bucket every turn a queued event names
// that the fold no longer holds: a queued event re-appended after its turn
// ended must not open it again. The reads run concurrently.
func (m *materializer) prefetch(ctx context.Context, evs []events.Event, b *batch) error {
	if m.kvBuckets() == nil {
		return nil // a memory fold with no buckets to read: storedTurn finds nothing
	}
	var ids []string
	want := map[string]bool{}
	for _, ev := range evs {
		switch ev.Data.(type) {
		case events.AgentQueued, events.RoleQueued:
		default:
			continue
		}
		id := lifecycle.TurnID(ev)
		if want[id] {
			continue
		}
		if _, ok := m.st.book.Turn(id); ok {
			continue
		}
		if _, ok := m.dirty.turns[id]; ok {
			continue
		}
		if _, ok := m.writing[id]; ok {
			continue
		}
		if _, ok := m.cache.get(id); ok {
			continue
		}
		if !m.mayBeOnlyInKV(id) {
			continue
		}
		want[id] = true
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		return nil
	}
	type result struct {
		t   lifecycle.Turn
		ok  bool
		err error
	}
	results := make([]result, len(ids))
	var wg sync.WaitGroup
	sem := make(chan struct{}, prefetchers)
	for i, id := range ids {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			t, ok, err := m.storedTurn(ctx, id)
			results[i] = result{t, ok, err}
		}()
	}
	wg.Wait()
	b.stored = map[string]lifecycle.Turn{}
	for i, r := range results {
		if r.err != nil {
			return r.err
		}
		if r.ok {
			b.stored[ids[i]] = r.t
		}
	}
	return nil
}

// unknownAfter is how far past the projector's birth a turn id's time must
// be for the turns bucket not to hold it from before: a margin for the
// clocks of the hosts that mint ids.
const unknownAfter = time.Minute

// pushedOut notes a turn the cache let go of: from now on the turns
// bucket is the only place that knows it.
func (m *materializer) pushedOut(id string) {
	if m.evicted != nil {
		m.evicted[id] = struct{}{}
	}
	if u, err := ulid.ParseStrict(id); err == nil {
		m.evictedNewest = max(m.evictedNewest, u.Time())
	}
}

// mayBeOnlyInKV reports whether turn id, which memory does not hold, may
// still be in the turns bucket — the KV read a queued event costs to
// learn whether its turn ended long ago. It cannot be when
//   - a rebuild folds into emptied buckets and never pushed id out of
//     its cache (a KV read per new turn was a sixth of a rebuild), or
//   - id is a ULID minted after the projector was born (with a margin
//     for clocks) and after every turn it pushed out: no earlier run
//     wrote it, and this one would remember it. That keeps the read off
//     a live turn's path from the lead to the pane.
func (m *materializer) mayBeOnlyInKV(id string) bool {
	if m.evicted != nil {
		_, out := m.evicted[id]
		return out
	}
	u, err := ulid.ParseStrict(id)
	if err != nil {
		return true
	}
	after := uint64(m.born.Add(unknownAfter).UnixMilli())
	return u.Time() <= max(after, m.evictedNewest)
}

// prefetchers bounds concurrent KV reads of one fold step.
const prefetchers = 32

// storedTurn reads a turn from the turns bucket.
func (m *materializer) storedTurn(ctx context.Context, id string) (lifecycle.Turn, bool, error) {
	if m.kvBuckets() == nil {
		return lifecycle.Turn{}, false, nil
	}
	var t lifecycle.Turn
	ok, err := m.kvBuckets().get(ctx, m.kvBuckets().turns, id, &t, m.o.Timeout)
	return t, ok, err
}

// endedBefore reports whether turn id had already ended before stream
// position seq.
func (m *materializer) endedBefore(id string, seq uint64, b *batch) bool {
	for _, lookup := range []func(string) (lifecycle.Turn, bool){
		m.cache.get,
		func(id string) (lifecycle.Turn, bool) { t, ok := m.dirty.turns[id]; return t, ok },
		func(id string) (lifecycle.Turn, bool) { t, ok := m.writing[id]; return t, ok },
		func(id string) (lifecycle.Turn, bool) { t, ok := b.stored[id]; return t, ok },
	} {
		if t, ok := lookup(id); ok && t.State.Final() && t.LastSeq < seq {
			return true
		}
	}
	return false
}

func (m *materializer) apply(ev events.Event, b *batch) {
	if ev.Time.After(m.st.logTime) {
		m.st.logTime = ev.Time
	}
	switch d := ev.Data.(type) {
	case events.HostUp:
		m.hostEvent(ev.Subject, ev.Time, true, b)
	case events.HostDown:
		m.hostEvent(ev.Subject, ev.Time, false, b)
	case events.RoleQueued, events.RoleCancelled:
		m.turnEvent(ev, b)
	case events.RoleBudgetWarning:
		m.st.roleUsage(ev.Subject).warned(d.Limit, d.Percent, ev.Time)
	case events.AgentRegistered, events.AgentStatusChanged, events.AgentQueued, events.AgentTyped,
		events.AgentSubmitted, events.AgentReplied, events.AgentUsage, events.AgentFailed, events.AgentSession, events.AgentExited,
		events.AgentDeferred, events.AgentAttention, events.AgentBudgetWarning, events.AgentReleased, events.AgentRestart,
		events.AgentDialog:
		m.agentEvent(ev, d, b)
	}
}

// usageOfEnded gives a replied turn of a the tokens and cost of its usage
// event: the turn is in the cache of ended turns, its view written again.
func (m *materializer) usageOfEnded(a *agentRow, ev events.Event, d events.AgentUsage, b *batch) {
	for i, id := range a.awaitingUsage {
		t, ok := m.cache.get(id)
		if !ok {
			continue
		}
		if t.PromptID != d.PromptID {
			continue
		}
		a.awaitingUsage = slices.Delete(a.awaitingUsage, i, i+1)
		lifecycle.UsageApplied(&t, d)
		t.LastSeq = ev.Seq
		m.cache.add(t)
		m.dirty.turn(t)
		b.changes = append(b.changes, Change{Kind: KindTurn, Key: t.ID, Seq: b.seq})
		return
	}
}

// spent counts a turn's tokens and cost (a reply's, or its usage event's)
// for the agent, its budget windows and its role's, and its session,
// which it returns.
func (m *materializer) spent(a *agentRow, ev events.Event, sessionID, model string, tokens events.Tokens, usd float64, b *batch) *sessionRow {
	a.Tokens = a.Tokens.Add(tokens)
	a.CostUSD += usd
	// The budget windows: the agent's own, and its role's.
	spend := Spend{Tokens: BudgetTokens(tokens), USD: usd}
	a.usage().add(ev.Time, spend)
	if a.Role != "" {
		m.st.roleUsage(a.Role).add(ev.Time, spend)
	}
	if sessionID != "" && a.SessionID == "" {
		a.SessionID = sessionID
	}
	s := m.sessionOf(a, "", b)
	s.Tokens = s.Tokens.Add(tokens)
	s.CostUSD += usd
	if model != "" {
		s.Model = model
	}
	if sessionID != "" && s.SessionID == "" {
		s.SessionID, s.Resume = sessionID, resumable(sessionID)
	}
	m.activity(s, ev.Time)
	return s
}

func (m *materializer) agentRow(id string) *agentRow {
	a, ok := m.st.agents[id]
	if !ok {
		a = &agentRow{Agent: Agent{Agent: id}}
		m.st.agents[id] = a
	}
	return a
}

func (m *materializer) touchAgent(a *agentRow, b *batch) {
	m.dirty.agents[a.Agent.Agent] = struct{}{}
	if a.Registered {
		b.changes = append(b.changes, Change{Kind: KindAgent, Key: a.Agent.Agent, Seq: b.seq})
	}
}

// dedupes lists the agent events whose second application would do harm:
// a re-appended replied would count its tokens twice, a submitted or
// failed would join a later turn, a registered would revive an exited
// agent. Status events are ordered by time instead; queued and typed are
// idempotent in the Book.
func dedupes(d events.Data) bool {
	switch d.(type) {
	case events.AgentRegistered, events.AgentSubmitted, events.AgentReplied, events.AgentUsage, events.AgentFailed,
		events.AgentSession, events.AgentExited, events.AgentBudgetWarning, events.AgentRestart:
		return true
	}
	return false
}

func (m *materializer) agentEvent(ev events.Event, data events.Data, b *batch) {
	id := ev.Subject
	a := m.agentRow(id)
	if dedupes(data) && a.seen(ev.ID) {
		return
	}
	if ev.Time.After(a.LastSeen) {
		a.LastSeen = ev.Time
	}
	switch d := data.(type) {
	case events.AgentRegistered:
		m.registered(a, ev, d, b)
	case events.AgentStatusChanged:
		if !ev.Time.Before(a.StatusAt) {
			a.Status, a.StatusAt = d.Status, ev.Time
		}
		if a.Dialog != nil && d.Status != events.StatusBlocked && ev.Time.After(a.Dialog.Since) {
			// The agent moved on: the dialog went, however it was answered.
			a.Dialog = nil
		}
		if d.Violation != "" {
			a.Violation = d.Violation
		}
	case events.AgentReplied:
		t, applied := m.turnEvent(ev, b)
		if w := d.Worktree; w.Head != "" {
			a.Worktree.Branch, a.Worktree.Head, a.Worktree.Dirty, a.Worktree.Ahead = w.Branch, w.Head, w.Dirty, w.Ahead
		}
		s := m.spent(a, ev, d.SessionID, d.Model, d.Tokens, d.CostUSD, b)
		if applied && t.State == lifecycle.StateReplied {
			s.Turns++
			if t.UsagePending && t.PromptID != "" {
				if len(a.awaitingUsage) == maxAwaitingUsage {
					a.awaitingUsage = a.awaitingUsage[1:]
				}
				a.awaitingUsage = append(a.awaitingUsage, t.ID)
			}
		}
	case events.AgentUsage:
		// A reply's usage, come after it: counted as the reply's own.
		if _, applied := m.turnEvent(ev, b); !applied {
			m.usageOfEnded(a, ev, d, b)
		}
		m.spent(a, ev, d.SessionID, d.Model, d.Tokens, d.CostUSD, b)
	case events.AgentSession:
		m.session(a, ev, d, b)
	case events.AgentBudgetWarning:
		a.usage().warned(d.Limit, d.Percent, ev.Time)
	case events.AgentRestart:
		switch d.State {
		case events.RestartRestarting:
			a.Restarting = true
		case events.RestartRestarted:
			a.Restarting = false
			a.Restarts++
		case events.RestartGaveUp:
			a.Restarting = false
		}
	case events.AgentDialog:
		switch d.State {
		case events.DialogOpen:
			a.Dialog = &Dialog{Title: d.Title, Question: d.Question, Detail: d.Detail, Options: d.Options, Since: ev.Time}
		case events.DialogUnanswered:
			if a.Dialog != nil {
				dl := *a.Dialog
				dl.Unanswered = d.Message
				a.Dialog = &dl
			}
		default:
			a.Dialog = nil
		}
	case events.AgentAttention:
		a.NeedsAttention, a.AttentionDetail = d.Reason, d.Detail
		if d.Reason == "" {
			a.AttentionDetail = ""
		}
	case events.AgentExited:
		a.Exited, a.Dialog = true, nil
		if d.StartFailed && a.FailedToStart == "" {
			a.FailedToStart = d.Reason
		}
		a.Starting = false
		if w := d.Worktree; w.Removed || w.Kept != "" {
			a.Worktree.Removed, a.Worktree.Kept = w.Removed, w.Kept
		}
		if s, ok := m.st.sessions[a.Session]; ok && s.Agent == id && s.State == SessionActive {
			s.State, s.StateAt = SessionClosed, ev.Time
			m.touchSession(s, b)
		}
	default: // queued, typed, submitted, failed, released
		if r, ok := data.(events.AgentReleased); ok && r.Reason == events.ReasonHostStale {
			m.judgeHost(a.Host, ev.Time, b)
		}
		if f, ok := data.(events.AgentFailed); ok && f.Reason == events.ReasonDenied && a.Status == events.StatusBlocked {
			// A dialog answered No ended the wait for a person with the
			// turn: the agent is not blocked, whatever status event
			// comes next to say so.
			a.Status = events.StatusIdle
		}
		if _, applied := m.turnEvent(ev, b); applied && a.Session != "" {
			if s, ok := m.st.sessions[a.Session]; ok {
				m.activity(s, ev.Time)
				m.touchSession(s, b)
			}
		}
	}
	m.touchAgent(a, b)
}

func (m *materializer) registered(a *agentRow, ev events.Event, d events.AgentRegistered, b *batch) {
	id := ev.Subject
	newPane := a.Registered && (d.Pane != a.Pane || d.Host != a.Host)
	a.Registered = true
	a.Host, a.Pane, a.Role, a.Tier, a.Parent, a.Cwd, a.Origin = d.Host, d.Pane, d.Role, d.Tier, d.Parent, d.Cwd, d.Origin
	a.Worktree, a.Sandbox = d.Worktree, d.Sandbox
	if d.Model != "" {
		a.Model = d.Model
	}
	a.Kind = d.Kind
	if a.Kind == "" {
		a.Kind = "claude" // registered before kinds existed: Claude Code was all there was
	}
	// A new pane runs a new process: whatever ended the last one's
	// session is over, and what needed attention was the old pane's (a
	// restart in a new pane must not stay refused for its dead shell).
	a.Exited, a.Violation, a.SessionEnded = false, "", false
	a.NeedsAttention, a.AttentionDetail = "", ""
	a.Starting, a.FailedToStart = d.Origin == "spawned", ""
	// Its session is known again when its SessionStart hook reports (the
	// same id, when it resumed one), and, in a new pane, its status when
	// that pane's first is: the old pane's "done" made a restarted agent
	// look ready before its new process was up.
	a.SessionID = ""
	if newPane && !ev.Time.Before(a.StatusAt) {
		a.Status, a.StatusAt = events.StatusUnknown, ev.Time
	}
	m.expectHost(d.Host, ev.Time, b)
	a.Stale = m.hostStale(d.Host)
	name := d.Session
	if name == "" {
		name = id
	}
	m.leaveSession(a, name, ev.Time, b)
	a.Session = name
	s := m.sessionOf(a, name, b)
	// A registration is a new pane serving the session: it is active
	// again whatever the time of its last state (a replayed registration
	// never gets here: it is deduplicated).
	s.State, s.StateAt = SessionActive, ev.Time
	m.activity(s, ev.Time)
}

// resumable is the id a named session resumes with: the reported id when
// it is Claude Code's format (a UUID), else none. The id comes from inside
// the agent (its own hooks, or events it writes past them) and a resume
// passes it to the launch of a new pane: anything else starts afresh.
func resumable(id string) string {
	if events.ValidSessionID(id) != nil {
		return ""
	}
	return id
}

func (m *materializer) session(a *agentRow, ev events.Event, d events.AgentSession, b *batch) {
	if d.Name != "" {
		m.leaveSession(a, d.Name, ev.Time, b)
		a.Session = d.Name
	}
	s := m.sessionOf(a, a.Session, b)
	switch {
	case d.State == "started":
		a.SessionEnded, a.Starting = false, false
		// Attention belongs to a pane and a session: a new session (a
		// resume, a /clear) is looked at afresh by its gateway, which
		// records the reason again if it still holds. herdrbridge's fold
		// keeps the same rule.
		a.NeedsAttention, a.AttentionDetail = "", ""
	case d.State == "ended" && d.Reason == "died" && a.Starting:
		a.SessionEnded, a.Starting = true, false
		a.FailedToStart = "its command exited before its Claude Code session started"
		if d.Message != "" {
			a.FailedToStart += "; its pane shows: " + d.Message
		}
	case d.State == "ended" && d.Reason != "clear" && (d.SessionID == "" || a.SessionID == "" || d.SessionID == a.SessionID):
		// A /clear ends a session and starts the next at once; an end of
		// a session already replaced changes nothing.
		a.SessionEnded = true
	}
	if d.SessionID != "" && d.State == "started" || a.SessionID == "" {
		s.SessionID, s.Resume, a.SessionID = d.SessionID, resumable(d.SessionID), d.SessionID
	}
	if d.TranscriptPath != "" {
		s.TranscriptPath = d.TranscriptPath
	}
	if d.Model != "" {
		s.Model = d.Model
	}
	if !ev.Time.Before(s.StateAt) {
		switch d.State {
		case "started":
			s.State, s.StateAt = SessionActive, ev.Time
		case "ended":
			s.State, s.StateAt = SessionEnded, ev.Time
		}
	}
	m.activity(s, ev.Time)
}

// leaveSession closes the session the agent served when it moves to
// another one: nobody serves it now, but it can be resumed.
func (m *materializer) leaveSession(a *agentRow, next string, t time.Time, b *batch) {
	old, ok := m.st.sessions[a.Session]
	if ok && a.Session != next && old.Agent == a.Agent.Agent && old.State == SessionActive {
		old.State, old.StateAt = SessionClosed, t
		m.touchSession(old, b)
	}
}

// sessionOf is the session the agent serves: name, else its session, else
// one named after the agent. It is created on first use and marked
// changed.
func (m *materializer) sessionOf(a *agentRow, name string, b *batch) *sessionRow {
	if name == "" {
		name = a.Session
	}
	if name == "" {
		name = a.Agent.Agent
		a.Session = name
	}
	s, ok := m.st.sessions[name]
	if !ok {
		s = &sessionRow{Session: Session{Name: name, State: SessionActive}}
		m.st.sessions[name] = s
	}
	s.Agent, s.Tier = a.Agent.Agent, a.Tier
	m.touchSession(s, b)
	return s
}

func (m *materializer) touchSession(s *sessionRow, b *batch) {
	m.dirty.sessions[s.Name] = struct{}{}
	b.changes = append(b.changes, Change{Kind: KindSession, Key: s.Name, Seq: b.seq})
}

// activity moves a session's last activity and idle deadline forward.
func (m *materializer) activity(s *sessionRow, t time.Time) {
	if s.StartedAt.IsZero() || t.Before(s.StartedAt) {
		s.StartedAt = t
	}
	if t.After(s.LastActive) {
		s.LastActive = t
		s.IdleDeadline = t.Add(m.o.IdleTTL)
	}
}

// turnEvent folds a turn event through the Book and records what changed.
func (m *materializer) turnEvent(ev events.Event, b *batch) (lifecycle.Turn, bool) {
	book := m.st.book
	id := lifecycle.TurnID(ev)
	switch ev.Data.(type) {
	case events.AgentQueued, events.RoleQueued:
		if _, open := book.Turn(id); !open && m.endedBefore(id, ev.Seq, b) {
			return lifecycle.Turn{}, false
		}
	}
	t, ok := book.Apply(ev)
	if !ok {
		return lifecycle.Turn{}, false
	}
	m.dirty.turn(t)
	b.changes = append(b.changes, Change{Kind: KindTurn, Key: t.ID, Seq: b.seq})
	if t.State.Final() {
		if out := m.cache.add(t); out != "" {
			m.pushedOut(out)
		}
		book.Forget(t.ID)
	}
	if ev.Type().Category() == events.CategoryAgent {
		m.refreshAgent(ev.Subject, b)
	}
	if t.Agent != "" && t.Agent != ev.Subject {
		m.refreshAgent(t.Agent, b)
	}
	return t, true
}

// refreshAgent copies the Book's view of an agent (turn in flight, queue
// depth) into its roster row.
func (m *materializer) refreshAgent(id string, b *batch) {
	a := m.agentRow(id)
	cur := ""
	if t, ok := m.st.book.InFlight(id); ok {
		cur = t.ID
	}
	depth := m.st.book.QueueLen(id)
	if a.CurrentTurn != cur || a.QueueDepth != depth {
		a.CurrentTurn, a.QueueDepth = cur, depth
		m.touchAgent(a, b)
	}
}

// hostEvent folds an up (or heartbeat) or down event of a host.
func (m *materializer) hostEvent(host string, t time.Time, up bool, b *batch) {
	h, ok := m.st.hosts[host]
	if !ok {
		h = &hostRow{}
		m.st.hosts[host] = h
	}
	if up && (h.Unheard || t.After(h.LastBeat)) {
		// Heard from: whatever a router judged before this point of the
		// log no longer holds.
		h.LastBeat, h.Unheard, h.JudgedAt = t, false, time.Time{}
	}
	if !t.Before(h.LastAt) {
		h.Down, h.LastAt = !up, t
	}
	m.restale(host, h, m.o.Now(), b)
}

// expectHost starts the clock on a host an agent is registered for but
// that has never announced itself (a typo'd --host, a gateway that never
// came up): unheard for HostTTL after its first agent, it is stale like a
// silent one, so its agents are shown as such and take no role turns.
func (m *materializer) expectHost(host string, t time.Time, b *batch) {
	if host == "" {
		return
	}
	if _, ok := m.st.hosts[host]; ok {
		return
	}
	h := &hostRow{LastBeat: t, Unheard: true}
	m.st.hosts[host] = h
	m.restale(host, h, m.o.Now(), b)
}

// judgeHost folds a router's release of a turn because host went silent
// (at t, by the router's clock): the host is stale from this point of the
// log until a heartbeat newer than any before is folded after it. The
// log's order decides, not the clocks of the hosts, which may disagree.
func (m *materializer) judgeHost(host string, t time.Time, b *batch) {
	h, ok := m.st.hosts[host]
	if host == "" || !ok {
		return
	}
	h.JudgedAt = t
	m.restale(host, h, m.o.Now(), b)
}

// hostStale reports whether a host is down or silent too long (or never
// heard from, HostTTL after its first agent was registered).
func (m *materializer) hostStale(host string) bool {
	h, ok := m.st.hosts[host]
	return ok && h.Stale
}

// restale recomputes a host's liveness at now and marks its agents.
func (m *materializer) restale(host string, h *hostRow, now time.Time, b *batch) {
	stale := h.Down || !h.JudgedAt.IsZero() || (now.Sub(h.LastBeat) > m.o.HostTTL && m.st.logTime.Sub(h.LastBeat) > m.o.HostTTL)
	if stale == h.Stale {
		return
	}
	h.Stale = stale
	for _, a := range m.st.agents {
		if a.Host == host && a.Registered && a.Stale != stale {
			a.Stale = stale
			m.touchAgent(a, b)
		}
	}
}

// sweep checks every host's liveness against the clock.
func (m *materializer) sweep() {
	b := &batch{seq: m.Applied()}
	now := m.o.Now()
	m.mu.Lock()
	for host, h := range m.st.hosts {
		m.restale(host, h, now, b)
	}
	if len(b.changes) > 0 {
		m.version.Add(1)
	}
	m.mu.Unlock()
	if len(b.changes) > 0 {
		m.notify(b.changes)
	}
}

// errNotFound is a KV miss, kept apart from failures.
func isNotFound(err error) bool {
	return errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted)
}
