package leadshim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/samber/lo"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/jobs"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/roles"
	"github.com/fleetd/fleetd/turns"
)

// Message is the body of POST /message and of the micro endpoint send.
type Message struct {
	// To is an agent id ("w-claude-1") or a role ("role:w-local").
	To string `json:"to"`
	// Text is the prompt. What is typed is lifecycle.Normalize(Text):
	// control sequences removed, CR and CRLF made LF, nothing else
	// changed; the turn says what was removed.
	Text string `json:"text,omitempty"`
	// Command is a slash command to type on purpose ("/clear",
	// "/compact focus on the tests"), instead of Text; the target's role
	// must allow it. The turn completes when the agent is idle again.
	Command string `json:"command,omitempty"`
	// From names the sender; default "lead".
	From string `json:"from,omitempty"`
	// Context are context selectors: item keys and tag:T. Without Job
	// they are recorded on the turn as they are.
	Context []string `json:"context,omitempty"`
	// Job, when set, names the job whose context store Context is resolved
	// against (jobs.SliceFor): the slice is recorded as a
	// JobSliced event, rendered after the text as <context> blocks, and
	// the turn carries the job and the slice reference — how a main
	// delegates a scoped slice to a worker. An unknown job is 404, a
	// selected key the store lacks 400.
	Job string `json:"job,omitempty"`
	// Timeout bounds the whole turn (a Go duration, "10m"); it becomes the
	// turn's deadline and how long a blocking call waits.
	Timeout string `json:"timeout,omitempty"`
	// Wait: true (default) blocks until the turn is final; false answers
	// 202 with the turn id at once.
	Wait *bool `json:"wait,omitempty"`
	// Queue: unset queues behind busy agents but refuses a blocked one
	// (409); true queues even for a blocked agent; false refuses unless
	// the turn can start now (agent busy → 409, role at its cap or with no
	// ready agent → 429).
	Queue *bool `json:"queue,omitempty"`
	// Notify: do not wait; when the turn ends, its reply (or why it
	// failed) is posted to From's inbox — the async path for long jobs.
	// The answer is 202 with the turn id; From must be an agent id.
	Notify bool `json:"notify,omitempty"`
}

// Tokens is a turn's model usage in the reply envelope.
type Tokens struct {
	In  int64 `json:"in"`
	Out int64 `json:"out"`
}

// Envelope is a turn as the lead sees it (DESIGN.md's reply envelope).
// Times are null until they happen; Reason and Message are set only for a
// failed turn.
type Envelope struct {
	ID        string `json:"id"`
	Agent     string `json:"agent"`
	Role      string `json:"role"`
	Kind      string `json:"kind,omitempty"` // the agent's CLI ("claude", …)
	Model     string `json:"model"`
	SessionID string `json:"session_id"`
	Status    string `json:"status"`
	Reply     string `json:"reply"`
	Tokens    Tokens `json:"tokens"`
	// UsagePending: the reply came before the agent's transcript showed
	// what the turn cost; Tokens are zero here and the turn's view
	// (GET /message/{id}, the dashboard, fleetd cost) has them a moment later.
	UsagePending bool       `json:"usage_pending,omitempty"`
	QueuedAt     *time.Time `json:"queued_at"`
	SubmittedAt  *time.Time `json:"submitted_at"`
	RepliedAt    *time.Time `json:"replied_at"`
	DurationMS   int64      `json:"duration_ms"`
	Reason       string     `json:"reason,omitempty"`
	Message      string     `json:"message,omitempty"`
	// Stalled says why a turn that is not final cannot progress now (the
	// log lost, the store full); empty otherwise.
	Stalled string `json:"stalled,omitempty"`
}

// Accepted is the 202 answer to a send with "wait": false.
type Accepted struct {
	ID     string `json:"id"`
	Status string `json:"status"`
}

// Error is the body of every error answer: {"error": {...}}.
type Error struct {
	Err ErrorBody `json:"error"`
}

// ErrorBody says what went wrong; ID is set when there is a turn to
// re-attach to.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	ID      string `json:"id,omitempty"`
	// FreesAt is when a refused turn would be taken (budget_exhausted:
	// when the budget frees up); HTTP also says it as Retry-After.
	FreesAt *time.Time `json:"frees_at,omitempty"`
}

// apiError is an error answer with its HTTP status.
type apiError struct {
	status int
	body   ErrorBody
	// retryAfter, when set, is sent as Retry-After.
	retryAfter time.Duration
}

func (e *apiError) Error() string { return e.body.Code + ": " + e.body.Message }

func fail(status int, code, format string, args ...any) *apiError {
	return &apiError{status: status, body: ErrorBody{Code: code, Message: fmt.Sprintf(format, args...)}}
}

// answer is a successful result with its status.
type answer struct {
	status int
	body   any
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// envelope renders a turn, filling role and model from the roster when the
// turn does not carry them.
func (s *Server) envelope(t lifecycle.Turn) Envelope {
	e := Envelope{
		ID: t.ID, Agent: t.Agent, Role: t.Role, Model: t.Model, SessionID: t.SessionID,
		Status: string(t.State), Reply: t.Reply, Tokens: Tokens{In: t.Tokens.In, Out: t.Tokens.Out}, UsagePending: t.UsagePending,
		QueuedAt: timePtr(t.QueuedAt), SubmittedAt: timePtr(t.SubmittedAt), RepliedAt: timePtr(t.RepliedAt),
		DurationMS: t.Duration().Milliseconds(), Reason: t.Reason, Message: t.Message,
	}
	if a, ok := s.cfg.Views.Agent(t.Agent); ok && t.Agent != "" {
		if e.Role == "" {
			e.Role = a.Role
		}
		if e.Model == "" {
			e.Model = a.Model
		}
		e.Kind = a.Kind
	}
	return e
}

// decodeMessage reads a send body strictly: unknown fields, trailing data
// and oversized bodies are refused, and a body that stops arriving (the
// connection's read deadline, BodyTimeout) is 408.
func decodeMessage(r io.Reader) (Message, *apiError) {
	var m Message
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		if aerr := readError(err); aerr != nil {
			return m, aerr
		}
		return m, fail(http.StatusBadRequest, "bad_json", "message body: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		if aerr := readError(err); aerr != nil {
			return m, aerr
		}
		return m, fail(http.StatusBadRequest, "bad_json", "message body: trailing data after the JSON object")
	}
	return m, nil
}

// readError is the answer to a body that could not be read: too large
// (413) or too slow (408); nil for anything else.
func readError(err error) *apiError {
	if tooBig, ok := errors.AsType[*http.MaxBytesError](err); ok {
		return fail(http.StatusRequestEntityTooLarge, "too_large", "body exceeds %d bytes", tooBig.Limit)
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return fail(http.StatusRequestTimeout, "body_timeout", "the request body did not arrive in time")
	}
	return nil
}

// parseTo reads a send's "to" (turns.ParseTarget): an agent id or
// role:R. A session target is the orchestrator's to resolve, not a send's.
func parseTo(to string) (turns.Target, *apiError) {
	t, err := turns.ParseTarget(to)
	if err == nil && t.Kind == turns.KindSession {
		return turns.Target{}, fail(http.StatusBadRequest, "bad_agent", "%q: a send names an agent id or role:<role>; sessions are resolved by the orchestrator", to)
	}
	if err != nil {
		return turns.Target{}, targetError(err)
	}
	return t, nil
}

// targetError answers a target turns refused: bad_to when there is none,
// bad_role for a bad role:R, bad_agent for anything else.
func targetError(err error) *apiError {
	te, ok := errors.AsType[*turns.TargetError](err)
	switch {
	case errors.Is(err, turns.ErrNoTarget):
		return fail(http.StatusBadRequest, "bad_to", `"to" is required: an agent id or role:<role>`)
	case ok && te.Kind == turns.KindRole:
		return fail(http.StatusBadRequest, "bad_role", "%v", te.Err)
	case ok:
		return fail(http.StatusBadRequest, "bad_agent", "%v", te.Err)
	}
	return fail(http.StatusBadRequest, "bad_to", "%v", err)
}

func (s *Server) parseDuration(field, v string, def time.Duration) (time.Duration, *apiError) {
	if v == "" {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fail(http.StatusBadRequest, "bad_"+field, "%s %q: want a positive duration like 30s or 10m", field, v)
	}
	if d > s.cfg.MaxTimeout {
		return 0, fail(http.StatusBadRequest, "bad_"+field, "%s %s exceeds the maximum %s", field, d, s.cfg.MaxTimeout)
	}
	return d, nil
}

// sendRaw decodes body and sends it: the one path HTTP and NATS share.
func (s *Server) sendRaw(ctx context.Context, body io.Reader) (answer, *apiError) {
	m, aerr := decodeMessage(body)
	if aerr != nil {
		return answer{}, aerr
	}
	return s.send(ctx, m)
}

// send validates m, queues the turn and, unless m.Wait is false, waits
// for it to become final.
func (s *Server) send(ctx context.Context, m Message) (answer, *apiError) {
	to, aerr := parseTo(m.To)
	if aerr != nil {
		return answer{}, aerr
	}
	text, norm, aerr := s.checkText(m)
	if aerr != nil {
		return answer{}, aerr
	}
	timeout, aerr := s.parseDuration("timeout", m.Timeout, s.cfg.DefaultTimeout)
	if aerr != nil {
		return answer{}, aerr
	}
	if m.From == "" {
		m.From = "lead"
	}
	if aerr := checkFields(m); aerr != nil {
		return answer{}, aerr
	}
	if m.Notify {
		if err := events.ValidAgentID(m.From); err != nil {
			return answer{}, fail(http.StatusBadRequest, "bad_from", `"notify" posts the reply to the inbox of "from", which must be an agent id: %v`, err)
		}
		wait := false
		m.Wait = &wait
	}
	if aerr := s.admit(to, m.Queue); aerr != nil {
		return answer{}, aerr
	}
	if aerr := s.checkCommand(m, to); aerr != nil {
		return answer{}, aerr
	}
	if s.cfg.NC != nil && !s.cfg.NC.IsConnected() {
		return answer{}, fail(http.StatusServiceUnavailable, "nats_unavailable", "not connected to NATS")
	}
	if e := s.healthError(); e != nil {
		// Refused before anything is queued: a turn the log cannot carry
		// through would only hang.
		return answer{}, e
	}
	m.Text = text
	// With a job, the slice's <context> blocks join the prompt; Queue
	// applies the text rule (and the size limits) to them too.
	text, ref, aerr := s.slice(ctx, m, to)
	if aerr != nil {
		return answer{}, aerr
	}
	id := s.cfg.NewID()
	if s.cfg.Expect != nil && to.Kind == turns.KindAgent {
		s.cfg.Expect(to.Name)
	}
	q, err := turns.Queuer{Log: s.cfg.Log, Source: s.source, Limits: s.limits(), Budget: s.cfg.Budgets}.Queue(ctx, turns.Turn{
		ID: id, To: m.To, From: m.From, Text: text, Command: m.Command, Normalized: norm,
		Context: m.Context, SliceRef: ref, Job: m.Job, Deadline: s.cfg.Now().Add(timeout), Notify: m.Notify})
	if be, ok := errors.AsType[*turns.BudgetError](err); ok {
		// Spent between the door and the queue.
		return answer{}, budgetExhausted(be, s.cfg.Now())
	}
	if err != nil {
		return answer{}, queueError(err)
	}
	s.metrics.sent.WithLabelValues(string(to.Kind)).Inc()
	// Read-your-writes: a GET right after the answer must find the turn.
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	err = s.cfg.Views.WaitSeq(wctx, q.Seq)
	cancel()
	if err != nil {
		s.cfg.Logger.Warn("leadshim: projection behind the log", "seq", q.Seq, "err", err)
	}
	if m.Wait != nil && !*m.Wait {
		return answer{status: http.StatusAccepted, body: Accepted{ID: id, Status: string(lifecycle.StateQueued)}}, nil
	}
	return s.await(ctx, id, timeout)
}

// checkText validates what a send asks to type, before anything is
// queued (turns.CheckText and the size limits): a text or a command,
// never both or neither; a text that is not empty once normalised and
// within MaxText (413 otherwise). A command turn carries no context or
// job. It returns the normalised text and what normalising changed.
func (s *Server) checkText(m Message) (string, events.Normalization, *apiError) {
	if m.Text == "" && m.Command != "" && (len(m.Context) > 0 || m.Job != "") {
		return "", events.Normalization{}, fail(http.StatusBadRequest, "bad_command", "a command turn carries no context or job")
	}
	text, norm, err := turns.CheckText(m.Text, m.Command)
	if err == nil && m.Command == "" {
		err = s.limits().Check(text)
	}
	if err != nil {
		return "", norm, textError(err, m.Text == "")
	}
	return text, norm, nil
}

// limits are the size limits of a turn's text: MaxText, and what the NATS
// server's max_payload leaves for it.
func (s *Server) limits() turns.Limits {
	l := turns.Limits{MaxText: s.cfg.MaxText}
	if s.cfg.NC != nil {
		l.MaxPayload = s.cfg.NC.MaxPayload()
	}
	return l
}

// textError answers a text turns refused; noText says the send gave none.
func textError(err error, noText bool) *apiError {
	switch {
	case errors.Is(err, turns.ErrTextAndCommand):
		return fail(http.StatusBadRequest, "text_and_command", `give "text" (a prompt) or "command" (a slash command), not both`)
	case errors.Is(err, turns.ErrEmptyText) && noText:
		return fail(http.StatusBadRequest, "empty_text", `"text" is empty (or send "command" to type a slash command)`)
	case errors.Is(err, turns.ErrEmptyText):
		return fail(http.StatusBadRequest, "empty_text", `"text" is empty once control sequences are removed`)
	}
	if se, ok := errors.AsType[*turns.SizeError](err); ok {
		msg := se.Error()
		if se.MaxPayload == 0 {
			msg += " (send a longer text as a file the agent can read)"
		}
		return fail(http.StatusRequestEntityTooLarge, "text_too_large", "%s", msg)
	}
	return nil
}

// queueError answers a turn turns.Queue refused or the log did not take;
// nothing was queued.
func queueError(err error) *apiError {
	if te, ok := errors.AsType[*turns.TargetError](err); ok {
		return targetError(te)
	}
	if e := textError(err, false); e != nil {
		return e
	}
	if errors.Is(err, events.ErrTooLarge) {
		// The log's limits are tighter than MaxText (or a field other
		// than the text is too long).
		return fail(http.StatusRequestEntityTooLarge, "too_large", "the turn is larger than an event may be: %v", err)
	}
	if e := logError(err); e != nil {
		return e
	}
	return fail(http.StatusServiceUnavailable, "nats_unavailable", "%v", err)
}

// checkFields refuses, before anything is queued, a sender name or a
// context selector longer than an event may carry (events.Limits).
func checkFields(m Message) *apiError {
	lim := events.DefaultLimits()
	if len(m.From) > lim.ID {
		return fail(http.StatusBadRequest, "bad_from", `"from" is %d bytes; at most %d`, len(m.From), lim.ID)
	}
	for _, c := range m.Context {
		if len(c) > lim.Line {
			return fail(http.StatusBadRequest, "bad_context", "a context selector is %d bytes; at most %d", len(c), lim.Line)
		}
	}
	return nil
}

// checkCommand refuses a command the target's role does not allow (400).
func (s *Server) checkCommand(m Message, to turns.Target) *apiError {
	if m.Command == "" {
		return nil
	}
	roleName := to.Name
	if to.Kind == turns.KindAgent {
		a, _ := s.cfg.Views.Agent(to.Name)
		roleName = a.Role
	}
	role, err := s.cfg.Roles.Get(roleName)
	if err != nil {
		role = roles.Role{Name: roleName}
	}
	if err := role.AllowsCommand(m.Command); err != nil {
		return fail(http.StatusBadRequest, "command_not_allowed", "%v", err)
	}
	return nil
}

// slice resolves a send's context selectors against its job's context
// store and records the slice, returning the prompt (the text followed by
// the slice's <context> blocks) and the slice reference. Without a job, or
// without selectors, the text goes as it is.
func (s *Server) slice(ctx context.Context, m Message, to turns.Target) (text, ref string, _ *apiError) {
	if m.Job == "" {
		return m.Text, "", nil
	}
	if err := events.ValidToken(m.Job); err != nil {
		return "", "", fail(http.StatusBadRequest, "bad_job", "job: %v", err)
	}
	known, err := jobs.Exists(ctx, s.cfg.Log, m.Job)
	if err != nil {
		return "", "", fail(http.StatusServiceUnavailable, "nats_unavailable", "%v", err)
	}
	if !known {
		return "", "", fail(http.StatusNotFound, "unknown_job", "no job %q in the log", m.Job)
	}
	if len(m.Context) == 0 {
		return m.Text, "", nil
	}
	sl, err := jobs.SliceFor(ctx, s.cfg.Log, m.Job, m.Context, 0)
	if err != nil {
		return "", "", fail(http.StatusServiceUnavailable, "nats_unavailable", "%v", err)
	}
	if len(sl.Missing) > 0 {
		return "", "", fail(http.StatusBadRequest, "missing_context", "job %s has no context item %s", m.Job, strings.Join(sl.Missing, ", "))
	}
	if to.Kind == turns.KindAgent {
		sl.Agent = to.Name
	}
	if ref, err = jobs.RecordSlice(ctx, s.cfg.Log, sl); err != nil {
		return "", "", fail(http.StatusServiceUnavailable, "nats_unavailable", "%v", err)
	}
	return jobs.Prompt(m.Text, sl), ref, nil
}

// hostUnheard reports whether host's gateway has never announced itself.
func (s *Server) hostUnheard(host string) bool {
	_, unheard := lo.Find(s.cfg.Views.Hosts(), func(h projections.Host) bool { return h.Host == host && h.Unheard })
	return unheard
}

// admit refuses a send its target cannot take: unknown (404), blocked or
// exited (409), or, with queue false, not free now (409 / 429).
func (s *Server) admit(to turns.Target, queue *bool) *apiError {
	if to.Kind == turns.KindAgent {
		agent := to.Name
		a, ok := s.cfg.Views.Agent(agent)
		switch {
		case !ok:
			return fail(http.StatusNotFound, "unknown_agent", "no agent %q in the roster", agent)
		case a.FailedToStart != "" && (a.Exited || a.SessionEnded) && !a.Restarting:
			return fail(http.StatusConflict, "failed_to_start", "agent %s failed to start: %s", agent, a.FailedToStart)
		case a.Exited:
			return fail(http.StatusConflict, "exited", "agent %s has exited", agent)
		case a.Stale && s.hostUnheard(a.Host):
			// No gateway owns it: a turn would wait until its deadline.
			return fail(http.StatusConflict, "host_unheard", "agent %s is registered for host %q, which has never announced itself: no `fleetd up --host %s` is running, so nothing would type to it", agent, a.Host, a.Host)
		case a.SessionEnded && !a.Restarting && (queue == nil || !*queue):
			// (An agent its role restarts takes the turn when it is back.)
			return fail(http.StatusConflict, "session_ended", `agent %s's Claude Code session ended (its pane may show a shell; nothing is typed there); restart it, or send with "queue": true to wait for a new session`, agent)
		case a.NeedsAttention != "" && (queue == nil || !*queue):
			return fail(http.StatusConflict, "needs_attention", `agent %s needs attention (%s: %s); send with "queue": true to queue anyway`, agent, a.NeedsAttention, a.AttentionDetail)
		case a.Status == events.StatusBlocked && (queue == nil || !*queue):
			return fail(http.StatusConflict, "blocked", `agent %s is blocked (waiting for a person); send with "queue": true to queue anyway`, agent)
		case queue != nil && !*queue && !a.Ready():
			return fail(http.StatusConflict, "busy", "agent %s is busy (%s, %d queued)", agent, a.Status, a.QueueDepth)
		}
		return s.overBudget(to)
	}
	st := s.roleState(to.Name)
	if !st.known {
		return fail(http.StatusNotFound, "unknown_role", "no role %q in the roles config or the roster", to.Name)
	}
	if aerr := s.overBudget(to); aerr != nil {
		return aerr
	}
	if queue != nil && !*queue && (st.Ready == 0 || (st.Cap > 0 && st.Open >= st.Cap)) {
		return fail(http.StatusTooManyRequests, "role_cap", "role %s cannot take a turn now (%d ready, %d open, cap %d)", to.Name, st.Ready, st.Open, st.Cap)
	}
	return nil
}

// overBudget is the 429 for a send whose target is out of budget. It asks
// the same gate turns.Queuer asks (Budgets.Admit), and asks it early: a
// refused send records no slice. Queue asks again as it queues, which is
// what holds for every other path (jobs, nudges).
func (s *Server) overBudget(to turns.Target) *apiError {
	if s.cfg.Budgets == nil {
		return nil
	}
	if be, ok := errors.AsType[*turns.BudgetError](s.cfg.Budgets.Admit(to)); ok {
		return budgetExhausted(be, s.cfg.Now())
	}
	return nil
}

// budgetExhausted is the 429 for a turn whose target is out of budget:
// which budget, and when it frees up (the body's frees_at, and
// Retry-After).
func budgetExhausted(be *turns.BudgetError, now time.Time) *apiError {
	limit := be.Limit
	if !be.FreesAt.IsZero() {
		limit += ", frees at " + be.FreesAt.UTC().Format(time.RFC3339)
	}
	e := fail(http.StatusTooManyRequests, "budget_exhausted", "%s is out of budget: %s; new turns are refused until then", be.Who(), limit)
	if !be.FreesAt.IsZero() {
		e.body.FreesAt = timePtr(be.FreesAt)
		e.retryAfter = max(be.FreesAt.Sub(now), time.Second)
	}
	return e
}

// RoleState is one row of GET /roles.
type RoleState struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Model       string `json:"model,omitempty"`
	EnvClass    string `json:"env_class,omitempty"`
	Tier        int    `json:"tier"`
	Cap         int    `json:"cap"`
	Agents      int    `json:"agents"`
	Ready       int    `json:"ready"`
	// Open counts the turns on the role's agents that are not final.
	Open int `json:"open"`
	// Inbox: the role's agents read by pull; messages for them go to their
	// inbox (POST /inbox/{agent}).
	Inbox bool `json:"inbox,omitempty"`
	// MaySpawn are the roles the role's agents may spawn (POST /agents).
	MaySpawn []string `json:"may_spawn,omitempty"`

	known bool
}

func (s *Server) roleState(role string) RoleState {
	r, inConfig := s.cfg.Roles.Roles[role]
	st := RoleState{Name: role, Description: r.Description, Model: r.Model, EnvClass: r.EnvClass, Tier: r.Tier, Cap: r.Cap, Inbox: r.Inbox, MaySpawn: r.MaySpawn, known: inConfig}
	agents := projections.OfRole(s.cfg.Views.Roster(), role)
	st.known = st.known || len(agents) > 0
	st.Agents = len(agents)
	st.Ready = lo.CountBy(agents, (*projections.Agent).Ready)
	st.Open = lo.SumBy(agents, (*projections.Agent).Open)
	return st
}

func final(t lifecycle.Turn) bool { return t.State.Final() }

// await waits up to timeout for the turn to become final and answers with
// its envelope, or 409/504 as DESIGN.md says.
func (s *Server) await(ctx context.Context, id string, timeout time.Duration) (answer, *apiError) {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t, err := s.cfg.Views.WaitTurn(wctx, id, final)
	if err != nil {
		if ctx.Err() != nil {
			e := fail(http.StatusServiceUnavailable, "unavailable", "the request ended before the turn did; re-attach with GET /message/%s", id)
			e.body.ID = id
			return answer{}, e
		}
		if he := s.healthError(); he != nil {
			// The turn could not progress, and its end cannot even be
			// recorded: say why instead of a bare timeout.
			e := fail(http.StatusServiceUnavailable, he.body.Code, "turn %s did not finish within %s (state %s) because the log takes no writes: %s. It is recorded as failed (timeout) once the log takes writes again, unless it replies first; re-attach with GET /message/%s",
				id, timeout, orQueued(t.State), he.body.Message, id)
			e.body.ID = id
			return answer{}, e
		}
		e := fail(http.StatusGatewayTimeout, "timeout", "turn %s not finished after %s (state %s); re-attach with GET /message/%s?wait=10m or 'fleetd turn %s'", id, timeout, orQueued(t.State), id, id)
		e.body.ID = id
		return answer{}, e
	}
	return s.finalAnswer(t)
}

func orQueued(s lifecycle.State) lifecycle.State {
	if s == "" {
		return lifecycle.StateQueued
	}
	return s
}

// finalAnswer maps a final turn to its answer: replied and most failures
// are 200 with the envelope; a turn failed because its agent was blocked
// is 409, one failed on timeout is 504.
func (s *Server) finalAnswer(t lifecycle.Turn) (answer, *apiError) {
	if t.State == lifecycle.StateFailed {
		switch t.Reason {
		case events.ReasonBlocked:
			e := fail(http.StatusConflict, "blocked", "turn %s failed: agent %s was blocked: %s", t.ID, t.Agent, t.Message)
			e.body.ID = t.ID
			return answer{}, e
		case events.ReasonTimeout:
			e := fail(http.StatusGatewayTimeout, "timeout", "turn %s timed out: %s", t.ID, t.Message)
			e.body.ID = t.ID
			return answer{}, e
		}
	}
	return answer{status: http.StatusOK, body: s.envelope(t)}, nil
}

// TurnQuery is the body of the micro endpoint turn.
type TurnQuery struct {
	ID   string `json:"id"`
	Wait string `json:"wait,omitempty"`
}

// turnAfterCatchUp waits (briefly) until the views have folded the log up
// to its current end and reads the turn again.
func (s *Server) turnAfterCatchUp(ctx context.Context, id string) (lifecycle.Turn, bool, error) {
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	end, err := s.cfg.Log.LastSeq(cctx, events.SubjectAll)
	if err != nil {
		return lifecycle.Turn{}, false, err
	}
	if err := s.cfg.Views.WaitSeq(cctx, end); err != nil {
		return lifecycle.Turn{}, false, nil
	}
	return s.cfg.Views.Turn(ctx, id)
}

// turn answers a turn's state, long-polling up to wait until it is final.
// A long-poll that ends before the turn does answers 200 with the state.
func (s *Server) turn(ctx context.Context, q TurnQuery) (answer, *apiError) {
	if _, err := ulid.ParseStrict(q.ID); err != nil {
		return answer{}, fail(http.StatusBadRequest, "bad_id", "turn id %q is not a ULID", q.ID)
	}
	wait, aerr := s.parseDuration("wait", q.Wait, 0)
	if aerr != nil {
		return answer{}, aerr
	}
	t, ok, err := s.cfg.Views.Turn(ctx, q.ID)
	if err == nil && !ok {
		// Not known yet may mean the views are still folding the log
		// (right after a restart): catch up with its end, then look again.
		t, ok, err = s.turnAfterCatchUp(ctx, q.ID)
	}
	if err != nil {
		return answer{}, fail(http.StatusServiceUnavailable, "unavailable", "read turn: %v", err)
	}
	if !ok {
		return answer{}, fail(http.StatusNotFound, "unknown_turn", "no turn %s", q.ID)
	}
	if wait > 0 && !t.State.Final() {
		wctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		if got, err := s.cfg.Views.WaitTurn(wctx, q.ID, final); err == nil {
			t = got
		} else if got.ID != "" {
			t = got
		}
	}
	env := s.envelope(t)
	if he := s.healthError(); he != nil && !t.State.Final() {
		env.Stalled = he.body.Message
	}
	return answer{status: http.StatusOK, body: env}, nil
}

// jsonBody marshals v for an answer.
func jsonBody(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return b.Bytes()
}
