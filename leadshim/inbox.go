package leadshim

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/samber/lo"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/inbox"
)

// Inbox is what the shim needs of the agents' durable inboxes;
// *inbox.Inboxes implements it.
type Inbox interface {
	// Open makes agent's inbox (a durable consumer on FLEET) if it is not
	// open yet.
	Open(ctx context.Context, agent string) (jetstream.Consumer, error)
	Post(ctx context.Context, m inbox.Message) (inbox.Message, error)
	Pull(ctx context.Context, agent string, max int, wait time.Duration) ([]inbox.Message, error)
	Ack(ctx context.Context, agent string, ids []string) ([]string, error)
	Known(ctx context.Context, agent string) (bool, error)
}

var _ Inbox = (*inbox.Inboxes)(nil)

// InboxPost is the body of POST /inbox/{agent}: a message for agent.
type InboxPost struct {
	// From is the sender's agent id, the inbox a reply goes to.
	From string `json:"from"`
	Text string `json:"text"`
	// ReplyTo is the id of the message this one answers.
	ReplyTo string `json:"reply_to,omitempty"`
}

// InboxBatch is the answer to GET /inbox/{agent}: the messages handed out,
// each the reader's until it acknowledges it (or the ack wait passes).
type InboxBatch struct {
	Agent    string          `json:"agent"`
	Messages []inbox.Message `json:"messages"`
}

// InboxAck is the body of POST /inbox/{agent}/ack.
type InboxAck struct {
	IDs []string `json:"ids"`
}

// InboxAcked answers it: the ids acknowledged, and those that were not
// held for the agent (acknowledged already, never pulled, or pulled
// before fleetd restarted: they come back after the ack wait).
type InboxAcked struct {
	Acked   []string `json:"acked"`
	NotHeld []string `json:"not_held,omitempty"`
}

// maxPull bounds the messages one GET /inbox hands out.
const maxPull = 100

// inboxOf is the inbox a request's path names: 404 when this fleetd
// serves no inboxes, 400 when {agent} is not an agent id.
func (s *Server) inboxOf(r *http.Request) (Inbox, string, *apiError) {
	if s.cfg.Inbox == nil {
		return nil, "", fail(http.StatusNotFound, "no_inbox", "this fleetd serves no inboxes")
	}
	agent := r.PathValue("agent")
	if err := events.ValidAgentID(agent); err != nil {
		return nil, "", fail(http.StatusBadRequest, "bad_agent", "%v", err)
	}
	return s.cfg.Inbox, agent, nil
}

// getInbox hands out agent's waiting messages, long-polling up to wait
// for the first when none waits. An inbox is a durable consumer, and
// FLEET's consumers are finite, so a GET opens one only for an agent of
// the roster or a caller with the bearer token: any other GET for an
// inbox not open — the read-only sign-in cookie's, a page's on a shim
// without a token — is 404 no_inbox and creates nothing.
func (s *Server) getInbox(w http.ResponseWriter, r *http.Request) {
	ib, agent, aerr := s.inboxOf(r)
	if aerr == nil && (s.inRoster(agent) || s.bearerToken(r)) {
		aerr = s.openInbox(r.Context(), ib, agent)
	}
	if aerr == nil {
		aerr = s.pullInbox(w, r, ib, agent)
	}
	if aerr != nil {
		writeError(w, aerr)
	}
}

// postOpen opens agent's inbox (POST /inbox/{agent}/open): how a lead
// outside the fleet makes the inbox it reads, and that messages may be
// posted to, when the shim has no token to present. A POST needs the
// bearer token when the shim has one; the sign-in cookie never counts.
func (s *Server) postOpen(w http.ResponseWriter, r *http.Request) {
	ib, agent, aerr := s.inboxOf(r)
	if aerr == nil {
		aerr = s.openInbox(r.Context(), ib, agent)
	}
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	writeJSON(w, http.StatusOK, InboxOpened{Agent: agent, Open: true})
}

// InboxOpened answers POST /inbox/{agent}/open.
type InboxOpened struct {
	Agent string `json:"agent"`
	Open  bool   `json:"open"`
}

func (s *Server) openInbox(ctx context.Context, ib Inbox, agent string) *apiError {
	if e := s.healthError(); e != nil {
		return e
	}
	if _, err := ib.Open(ctx, agent); err != nil {
		return s.inboxError(err)
	}
	return nil
}

// inRoster reports whether agent is a live agent of the roster.
func (s *Server) inRoster(agent string) bool {
	a, ok := s.cfg.Views.Agent(agent)
	return ok && a.Host != "" && !a.Exited
}

// bearerToken reports whether r carries the shim's bearer token: the
// credential that may change things, unlike the sign-in cookie, which
// stands for it on reads only. Without a token there is none to carry:
// nothing then tells a client from a page a browser loads, so nothing
// counts.
func (s *Server) bearerToken(r *http.Request) bool {
	return s.cfg.Token != "" && subtle.ConstantTimeCompare(bearer(r.Header.Get("Authorization")), []byte(s.cfg.Token)) == 1
}

func (s *Server) pullInbox(w http.ResponseWriter, r *http.Request, ib Inbox, agent string) *apiError {
	q := r.URL.Query()
	wait, aerr := s.parseDuration("wait", q.Get("wait"), 0)
	if q.Get("wait") == "0" || q.Get("wait") == "0s" {
		wait, aerr = 0, nil
	}
	if aerr != nil {
		return aerr
	}
	max := 10
	if v := q.Get("max"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPull {
			return fail(http.StatusBadRequest, "bad_max", "max %q: want 1 to %d", v, maxPull)
		}
		max = n
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	stop := context.AfterFunc(s.stopping, cancel)
	defer stop()
	msgs, err := ib.Pull(ctx, agent, max, wait)
	if err != nil && len(msgs) == 0 {
		return s.inboxError(err)
	}
	if msgs == nil {
		msgs = []inbox.Message{}
	}
	writeJSON(w, http.StatusOK, InboxBatch{Agent: agent, Messages: msgs})
	return nil
}

// ackInbox acknowledges agent's messages by id.
func (s *Server) ackInbox(w http.ResponseWriter, r *http.Request) {
	ib, agent, aerr := s.inboxOf(r)
	var body InboxAck
	if aerr == nil {
		aerr = decodeBody(r, &body)
	}
	if aerr == nil && len(body.IDs) == 0 {
		aerr = fail(http.StatusBadRequest, "no_ids", `"ids" lists the message ids to acknowledge`)
	}
	if aerr == nil && len(body.IDs) > maxPull {
		aerr = fail(http.StatusBadRequest, "bad_ids", "at most %d ids at once", maxPull)
	}
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	acked, err := ib.Ack(r.Context(), agent, body.IDs)
	if err != nil {
		writeError(w, s.inboxError(err))
		return
	}
	out := InboxAcked{Acked: acked, NotHeld: lo.Without(body.IDs, acked...)}
	if out.Acked == nil {
		out.Acked = []string{}
	}
	writeJSON(w, http.StatusOK, out)
}

// postInbox posts a message to agent's inbox: an agent of the roster, or
// one that has opened its inbox (a lead outside the fleet); anyone else
// is 404, so a typo does not leave a message no one will ever read.
func (s *Server) postInbox(w http.ResponseWriter, r *http.Request) {
	ib, agent, aerr := s.inboxOf(r)
	var body InboxPost
	if aerr == nil {
		aerr = decodeBody(r, &body)
	}
	if aerr == nil {
		aerr = s.checkPost(r.Context(), ib, agent, body)
	}
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	m, err := ib.Post(r.Context(), inbox.Message{To: agent, From: body.From, Text: body.Text, ReplyTo: body.ReplyTo})
	if err != nil {
		writeError(w, s.inboxError(err))
		return
	}
	writeJSON(w, http.StatusAccepted, m)
}

func (s *Server) checkPost(ctx context.Context, ib Inbox, agent string, body InboxPost) *apiError {
	if err := events.ValidAgentID(body.From); err != nil {
		return fail(http.StatusBadRequest, "bad_from", `"from" is the sender's agent id, where a reply goes: %v`, err)
	}
	if strings.TrimSpace(body.Text) == "" {
		return fail(http.StatusBadRequest, "empty_text", "the message has no text")
	}
	if len(body.Text) > s.cfg.MaxText {
		return fail(http.StatusRequestEntityTooLarge, "text_too_large", "the text is %d bytes; at most %d", len(body.Text), s.cfg.MaxText)
	}
	if e := s.healthError(); e != nil {
		return e
	}
	if s.inRoster(agent) {
		return nil
	}
	known, err := ib.Known(ctx, agent)
	if err != nil {
		return s.inboxError(err)
	}
	if !known {
		return fail(http.StatusNotFound, "unknown_agent", "no agent %s in the roster, and no inbox of that name was ever opened", agent)
	}
	return nil
}

// inboxError answers an error of the inboxes: a bad message is 400, the
// log's troubles their 503, anything else 503 unavailable.
func (s *Server) inboxError(err error) *apiError {
	switch {
	case errors.Is(err, inbox.ErrBadMessage):
		return fail(http.StatusBadRequest, "bad_message", "%v", err)
	case errors.Is(err, inbox.ErrNoInbox):
		return fail(http.StatusNotFound, "no_inbox", "no inbox of that name is open (it opens for an agent of the roster, with POST /inbox/{agent}/open, or a GET with the bearer token): %v", err)
	case errors.Is(err, inbox.ErrTooManyInboxes):
		return fail(http.StatusServiceUnavailable, "too_many_inboxes", "%v", err)
	case errors.Is(err, context.Canceled):
		return fail(http.StatusServiceUnavailable, "shutting_down", "%v", err)
	}
	if e := logError(err); e != nil {
		return e
	}
	return fail(http.StatusServiceUnavailable, "unavailable", "inbox: %v", err)
}

// decodeBody decodes a JSON request body strictly into v.
func decodeBody(r *http.Request, v any) *apiError {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if aerr := readError(err); aerr != nil {
			return aerr
		}
		return fail(http.StatusBadRequest, "bad_json", "body: %v", err)
	}
	return nil
}

// Inbox pulls up to max of agent's messages (0: the shim's default),
// long-polling up to wait ("": answer at once) for the first.
func (c *Client) Inbox(ctx context.Context, agent string, max int, wait string) (InboxBatch, error) {
	q := url.Values{}
	if max > 0 {
		q.Set("max", strconv.Itoa(max))
	}
	if wait != "" {
		q.Set("wait", wait)
	}
	p := "/inbox/" + url.PathEscape(agent)
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	var b InboxBatch
	err := c.Do(ctx, http.MethodGet, p, nil, &b)
	if ce, ok := errors.AsType[*ClientError](err); ok && ce.Body.Code == "no_inbox" {
		// The caller reads its own inbox: open it (a lead outside the
		// fleet, on a shim without a token) and pull again.
		if err := c.OpenInbox(ctx, agent); err != nil {
			return b, err
		}
		err = c.Do(ctx, http.MethodGet, p, nil, &b)
	}
	return b, err
}

// OpenInbox opens agent's inbox.
func (c *Client) OpenInbox(ctx context.Context, agent string) error {
	return c.Do(ctx, http.MethodPost, "/inbox/"+url.PathEscape(agent)+"/open", nil, nil)
}

// Ack acknowledges agent's messages ids.
func (c *Client) Ack(ctx context.Context, agent string, ids []string) (InboxAcked, error) {
	var a InboxAcked
	err := c.Do(ctx, http.MethodPost, "/inbox/"+url.PathEscape(agent)+"/ack", InboxAck{IDs: ids}, &a)
	return a, err
}

// Post posts a message to agent's inbox.
func (c *Client) Post(ctx context.Context, agent string, p InboxPost) (inbox.Message, error) {
	var m inbox.Message
	err := c.Do(ctx, http.MethodPost, "/inbox/"+url.PathEscape(agent), p, &m)
	return m, err
}
