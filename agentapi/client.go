package agentapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Status is agentapi's view of the agent: "running" while its screen
// changes (and before its prompt box first shows), "stable" once the
// screen has not changed for 2 s (agentapi polls it every 25 ms) and the
// prompt box is on it.
type Status string

// The two statuses agentapi reports.
const (
	StatusRunning Status = "running"
	StatusStable  Status = "stable"
)

// StatusInfo is GET /status.
type StatusInfo struct {
	Status Status `json:"status"`
	// AgentType is what agentapi took the agent for ("claude", "codex",
	// "custom", …): it picks the prompt-box detector and the message
	// formatter.
	AgentType string `json:"agent_type"`
	// Transport is "pty" (a terminal) or "acp" (the experimental Agent
	// Client Protocol transport, which this package does not use).
	Transport string `json:"transport"`
}

// Message is one entry of agentapi's conversation: a user message it
// typed, or the agent's answer as agentapi cut it from the screen (the
// rows that changed since the user message, its prompt box removed).
type Message struct {
	ID      int       `json:"id"`
	Role    string    `json:"role"` // "user" or "agent"
	Content string    `json:"content"`
	Time    time.Time `json:"time"`
}

// DefaultTimeout bounds a request whose context has no deadline.
// SendTimeout bounds Send, which agentapi answers only once the agent
// reacted (up to ~18 s by its own timeouts: 3 s echo, 15 s for Enter).
const (
	DefaultTimeout = 10 * time.Second
	SendTimeout    = 60 * time.Second
)

// Client speaks one agentapi server's HTTP API. It is safe for concurrent
// use; agentapi itself serialises messages.
type Client struct {
	base string
	hc   *http.Client
}

// NewClient returns a client for the server at baseURL (e.g.
// "http://127.0.0.1:3284"); hc nil means a client of its own. It does no I/O.
func NewClient(baseURL string, hc *http.Client) *Client {
	if hc == nil {
		// Not http.DefaultClient: a stream holds its connection for hours,
		// and a fleet's worth of them should not share the default pool.
		hc = &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 4}}
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), hc: hc}
}

// URL is the server's base URL.
func (c *Client) URL() string { return c.base }

// Status returns GET /status.
func (c *Client) Status(ctx context.Context) (StatusInfo, error) {
	var s StatusInfo
	err := c.do(ctx, DefaultTimeout, http.MethodGet, "/status", nil, &s)
	return s, err
}

// Messages returns GET /messages: the conversation as agentapi tracked it.
// Raw input (SendRaw) is not in it.
func (c *Client) Messages(ctx context.Context) ([]Message, error) {
	var r struct {
		Messages []Message `json:"messages"`
	}
	err := c.do(ctx, DefaultTimeout, http.MethodGet, "/messages", nil, &r)
	return r.Messages, err
}

// Send sends text as a "user" message: agentapi trims it, types "x",
// Backspace, then the text as one bracketed paste, waits for the screen
// to settle (up to 3 s), writes Enter and writes it again every 3 s until
// the screen changes (up to 15 s), and only then answers. It fails with
// ErrBusy unless the agent is stable. What Claude Code makes of such a
// paste (slash commands, "!" bash mode, <pasted_content> wrapping of long
// or multi-line text) is measured in docs/agentapi.md: fleetd types its
// turns with SendRaw instead.
func (c *Client) Send(ctx context.Context, text string) error {
	return c.message(ctx, SendTimeout, "user", text)
}

// SendRaw writes input to the agent's terminal as it is (keys, escape
// sequences, a bracketed paste of fleetd's own making) and answers at
// once. Nothing is trimmed, nothing is recorded as a message, and it is
// accepted whatever the status.
func (c *Client) SendRaw(ctx context.Context, input string) error {
	return c.message(ctx, DefaultTimeout, "raw", input)
}

func (c *Client) message(ctx context.Context, timeout time.Duration, typ, content string) error {
	body, err := json.Marshal(struct {
		Type    string `json:"type"`
		Content string `json:"content"`
	}{typ, content})
	if err != nil {
		return err
	}
	var r struct {
		Ok bool `json:"ok"`
	}
	if err := c.do(ctx, timeout, http.MethodPost, "/message", body, &r); err != nil {
		return err
	}
	if !r.Ok {
		return fmt.Errorf("agentapi POST /message (%s): answered ok=false", typ)
	}
	return nil
}

// Screen returns the agent's terminal as text: rows of the emulator's
// width joined by "\n", trailing white space of the whole screen trimmed.
// agentapi has no plain GET for it; this opens the hidden /internal/screen
// stream (what `agentapi attach` uses), takes its first event (agentapi's
// latest snapshot, at most 25 ms old) and closes it. Before agentapi's
// first snapshot it is "".
func (c *Client) Screen(ctx context.Context) (string, error) {
	ctx, cancel := withDefault(ctx, DefaultTimeout)
	defer cancel()
	s, err := c.stream(ctx, "/internal/screen")
	if err != nil {
		return "", err
	}
	defer s.Close()
	for {
		ev, err := s.Next()
		if err != nil {
			return "", fmt.Errorf("agentapi screen: %w", err)
		}
		if ev.Type == EventScreen {
			return ev.Screen, nil
		}
	}
}

// Events subscribes to GET /events. The stream starts with the state as
// agentapi holds it (every message so far, the status, recent errors) and
// then carries changes. It ends (io.EOF) when the server stops, which it
// does when the agent exits; agentapi also ends a subscriber that falls
// 1024 events behind, so read it steadily.
func (c *Client) Events(ctx context.Context) (*Stream, error) {
	return c.stream(ctx, "/events")
}

// ScreenUpdates subscribes to the screen stream: one EventScreen at once,
// then one per change of the screen (up to 40 a second while the agent
// draws; each the whole screen).
func (c *Client) ScreenUpdates(ctx context.Context) (*Stream, error) {
	return c.stream(ctx, "/internal/screen")
}

// do sends one request and decodes the JSON answer into out, or an
// APIError.
func (c *Client) do(ctx context.Context, timeout time.Duration, method, path string, body []byte, out any) error {
	ctx, cancel := withDefault(ctx, timeout)
	defer cancel()
	op := method + " " + path
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return fmt.Errorf("agentapi %s: %w", op, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return fmt.Errorf("agentapi %s: %w", op, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("agentapi %s: %w", op, err)
	}
	if resp.StatusCode/100 != 2 {
		return apiError(op, resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("agentapi %s: decode %q: %w", op, truncate(raw, 200), err)
	}
	return nil
}

// apiError reads huma's problem JSON; an answer that is not one (a proxy,
// the host check's plain text) keeps its text as the detail.
func apiError(op string, status int, raw []byte) error {
	var p struct {
		Title  string `json:"title"`
		Detail string `json:"detail"`
		Errors []struct {
			Message  string `json:"message"`
			Location string `json:"location"`
			Value    any    `json:"value"`
		} `json:"errors"`
	}
	e := &APIError{Op: op, Status: status}
	if json.Unmarshal(raw, &p) != nil {
		e.Title = http.StatusText(status)
		e.Detail = strings.TrimSpace(string(truncate(raw, 500)))
		return e
	}
	e.Title, e.Detail = p.Title, p.Detail
	for _, x := range p.Errors {
		m := x.Message
		if m == "" && x.Location != "" {
			m = fmt.Sprintf("%s: %v", x.Location, x.Value)
		}
		e.Messages = append(e.Messages, m)
	}
	return e
}

func truncate(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// withDefault gives ctx a deadline d away when it has none.
func withDefault(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}
