package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetd/fleetd/inbox"
	"github.com/fleetd/fleetd/leadshim"
)

// InboxInput is the inbox tool's arguments.
type InboxInput struct {
	Wait string   `json:"wait,omitempty" jsonschema:"how long to wait for a message when none is there yet, a Go duration such as 30s or 5m (default: do not wait)"`
	Max  int      `json:"max,omitempty" jsonschema:"at most this many messages (1 to 100, default 10)"`
	Ack  []string `json:"ack,omitempty" jsonschema:"ids of messages you have handled, acknowledged before the pull: they are never handed to you again"`
}

// ReplyInput is the reply tool's arguments.
type ReplyInput struct {
	ID   string `json:"id" jsonschema:"the id of the inbox message you answer"`
	Text string `json:"text" jsonschema:"your answer, complete: the sender sees only this"`
	To   string `json:"to,omitempty" jsonschema:"the sender's agent id; needed only when the message did not come from an inbox call of this session"`
}

// InboxResult is what the inbox tool returns.
type InboxResult struct {
	Messages []inbox.Message `json:"messages"`
	Acked    []string        `json:"acked,omitempty"`
	NotHeld  []string        `json:"not_held,omitempty"`
	Note     string          `json:"note,omitempty"`
}

// Delivered is what send returns for an agent that reads by pull: the
// message went to its inbox, and its answer will come to the sender's.
type Delivered struct {
	Message string `json:"message"`
	To      string `json:"to"`
	Inbox   bool   `json:"inbox"`
	Note    string `json:"note"`
}

func (s *Server) addInboxTools() {
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name: "inbox",
		Description: "Pull the messages addressed to you (from other mains, leads, and the replies of turns you sent with notify). " +
			"Each message stays yours until acknowledged: answer it with reply (which acknowledges it), or pass its id in ack " +
			"on your next inbox call once handled. A message you never acknowledge is handed to you again after ten minutes. " +
			"With wait, blocks until a message arrives or the wait ends.",
	}, s.inbox)
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name: "reply",
		Description: "Answer a message of your inbox: your text goes to the sender's inbox, marked as the answer to that message, " +
			"and the message is acknowledged (it will not come back).",
	}, s.reply)
}

func (s *Server) inbox(ctx context.Context, _ *mcp.CallToolRequest, in InboxInput) (*mcp.CallToolResult, any, error) {
	if in.Max < 0 || in.Max > 100 {
		return nil, nil, fmt.Errorf("inbox: max %d: want 1 to 100", in.Max)
	}
	var out InboxResult
	if len(in.Ack) > 0 {
		a, err := s.cfg.Fleet.Ack(ctx, s.cfg.Agent, in.Ack)
		if err != nil {
			return nil, nil, toolError("inbox: ack", err)
		}
		out.Acked, out.NotHeld = a.Acked, a.NotHeld
		s.forget(a.Acked...)
	}
	b, err := s.cfg.Fleet.Inbox(ctx, s.cfg.Agent, in.Max, in.Wait)
	if err != nil {
		return nil, nil, toolError("inbox", err)
	}
	out.Messages = b.Messages
	s.mu.Lock()
	for _, m := range b.Messages {
		s.senders[m.ID] = m.From
	}
	s.mu.Unlock()
	if len(out.Messages) == 0 {
		out.Note = "no messages waiting"
	}
	return result(out)
}

func (s *Server) forget(ids ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		delete(s.senders, id)
	}
}

func (s *Server) reply(ctx context.Context, _ *mcp.CallToolRequest, in ReplyInput) (*mcp.CallToolResult, any, error) {
	if strings.TrimSpace(in.ID) == "" {
		return nil, nil, fmt.Errorf("reply: id is empty: pass the id of the inbox message you answer")
	}
	if err := s.checkText("reply: text", in.Text); err != nil {
		return nil, nil, err
	}
	to := in.To
	if to == "" {
		s.mu.Lock()
		to = s.senders[in.ID]
		s.mu.Unlock()
	}
	if to == "" {
		return nil, nil, fmt.Errorf("reply: message %s was not handed out by an inbox call of this session: pass to (its sender's agent id) too", in.ID)
	}
	m, err := s.cfg.Fleet.Post(ctx, to, leadshim.InboxPost{From: s.cfg.Agent, Text: in.Text, ReplyTo: in.ID})
	if err != nil {
		return nil, nil, toolError("reply", err)
	}
	// The answer is stored: only now is the message handled.
	a, err := s.cfg.Fleet.Ack(ctx, s.cfg.Agent, []string{in.ID})
	if err != nil {
		return nil, nil, toolError("reply: sent as "+m.ID+", but the acknowledgement failed", err)
	}
	s.forget(a.Acked...)
	return result(map[string]any{"reply": m.ID, "to": to, "acknowledged": len(a.Acked) == 1})
}

// pullReader reports whether agent reads by pull: its role (from the
// roster) is an inbox role.
func (s *Server) pullReader(ctx context.Context, agent string) (bool, error) {
	agents, err := s.cfg.Fleet.Roster(ctx)
	if err != nil {
		return false, err
	}
	role := ""
	for _, a := range agents {
		if a.Agent == agent {
			role = a.Role
		}
	}
	if role == "" {
		return false, nil
	}
	roles, err := s.cfg.Fleet.Roles(ctx)
	if err != nil {
		return false, err
	}
	for _, r := range roles {
		if r.Name == role {
			return r.Inbox, nil
		}
	}
	return false, nil
}

// deliver posts a send's text to the inbox of an agent that reads by pull.
func (s *Server) deliver(ctx context.Context, to, text string) (*mcp.CallToolResult, any, error) {
	m, err := s.cfg.Fleet.Post(ctx, to, leadshim.InboxPost{From: s.cfg.Agent, Text: text})
	if err != nil {
		return nil, nil, toolError("send", err)
	}
	return result(Delivered{Message: m.ID, To: to, Inbox: true,
		Note: to + " reads by pull: the message waits in its inbox (fleetd nudges it when idle); its answer will arrive in your inbox — call inbox to collect it"})
}
