package herdrapi

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"time"
)

// DefaultTimeout bounds a call whose ctx has no deadline. herdr itself has
// no server-side timeout, so without one a wedged herdr would hang fleetd.
const DefaultTimeout = 10 * time.Second

// maxResponseBytes caps one response line. A full session snapshot or a
// 1000-line read is far below it; the cap only stops a runaway peer.
const maxResponseBytes = 64 << 20

// Dialer opens a connection to herdr's socket. It is a Client option so
// tests can wrap the connection (to record or validate what is sent).
type Dialer func(ctx context.Context, path string) (net.Conn, error)

// Client calls herdr over its Unix socket. It is safe for concurrent use:
// it holds no connection, because herdr serves one request per connection.
type Client struct {
	path    string
	dial    Dialer
	timeout time.Duration
	ids     atomic.Uint64
	observe func(method string)
	timed   func(method string, took time.Duration)
}

// Option configures a Client.
type Option func(*Client)

// WithDialer replaces the default Unix-socket dialer.
func WithDialer(d Dialer) Option { return func(c *Client) { c.dial = d } }

// WithObserver calls fn with the method of every request the Client sends
// (calls and subscriptions alike), so what fleetd asks of herdr can be
// counted: each request costs herdr a connection and its app thread's time.
func WithObserver(fn func(method string)) Option { return func(c *Client) { c.observe = fn } }

// WithTimer calls fn when a call (one request, one response) ends,
// answered or not, with how long it took from dialling to its answer
// decoded. Subscriptions are not timed: they last as long as their reader.
// Every turn waits for herdr's answers (the screen read before typing,
// the prompt), so their time is part of the fabric's, and herdr serves
// them one at a time on its app thread.
func WithTimer(fn func(method string, took time.Duration)) Option {
	return func(c *Client) { c.timed = fn }
}

// WithTimeout sets the deadline used when a call's ctx has none.
func WithTimeout(d time.Duration) Option { return func(c *Client) { c.timeout = d } }

// New returns a Client for the socket at path. It does no I/O; use Check (or
// Connect) to find out whether herdr is there and speaks Protocol.
func New(path string, opts ...Option) *Client {
	c := &Client{path: path, timeout: DefaultTimeout}
	var d net.Dialer
	c.dial = func(ctx context.Context, path string) (net.Conn, error) {
		return d.DialContext(ctx, "unix", path)
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Connect returns a Client for path after Check succeeded.
func Connect(ctx context.Context, path string, opts ...Option) (*Client, error) {
	c := New(path, opts...)
	if _, err := c.Check(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// Path is the socket path the Client dials.
func (c *Client) Path() string { return c.path }

// Ping asks herdr for its version and protocol.
func (c *Client) Ping(ctx context.Context) (Pong, error) {
	var p Pong
	err := c.call(ctx, "ping", struct{}{}, "pong", &p)
	return p, err
}

// Check pings herdr and fails with ErrProtocolMismatch when it speaks a
// protocol other than Protocol, naming both versions.
func (c *Client) Check(ctx context.Context) (Pong, error) {
	p, err := c.Ping(ctx)
	if err != nil {
		return p, err
	}
	if p.Protocol != Protocol {
		return p, fmt.Errorf("%w: herdr %s at %s speaks protocol %d, fleetd speaks protocol %d",
			ErrProtocolMismatch, p.Version, c.path, p.Protocol, Protocol)
	}
	return p, nil
}

// Snapshot returns the whole session (session.snapshot).
func (c *Client) Snapshot(ctx context.Context) (Snapshot, error) {
	var r struct {
		Snapshot Snapshot `json:"snapshot"`
	}
	err := c.call(ctx, "session.snapshot", struct{}{}, "session_snapshot", &r)
	return r.Snapshot, err
}

// Panes lists the panes of workspaceID, or of every workspace when it is "".
func (c *Client) Panes(ctx context.Context, workspaceID string) ([]PaneInfo, error) {
	var r struct {
		Panes []PaneInfo `json:"panes"`
	}
	params := struct {
		WorkspaceID string `json:"workspace_id,omitempty"`
	}{workspaceID}
	err := c.call(ctx, "pane.list", params, "pane_list", &r)
	return r.Panes, err
}

// Pane returns one pane (pane.get).
func (c *Client) Pane(ctx context.Context, paneID string) (PaneInfo, error) {
	return c.paneCall(ctx, "pane.get", paneTarget{paneID})
}

// FocusPane focuses a pane (pane.focus), which also marks a done agent seen
// (done → idle, with no event).
func (c *Client) FocusPane(ctx context.Context, paneID string) (PaneInfo, error) {
	return c.paneCall(ctx, "pane.focus", paneTarget{paneID})
}

// SplitRequest is the pane.split request. Zero fields are omitted, so herdr
// applies its own defaults (target: the focused pane; no focus change).
type SplitRequest struct {
	Direction    SplitDirection    `json:"direction"`
	TargetPaneID string            `json:"target_pane_id,omitempty"`
	WorkspaceID  string            `json:"workspace_id,omitempty"`
	Ratio        float64           `json:"ratio,omitempty"`
	CWD          string            `json:"cwd,omitempty"`
	Focus        bool              `json:"focus,omitempty"`
	Env          map[string]string `json:"env,omitempty"`
}

// Split creates a pane running herdr's default shell, with Env applied to
// it, and returns the new pane.
func (c *Client) Split(ctx context.Context, req SplitRequest) (PaneInfo, error) {
	return c.paneCall(ctx, "pane.split", req)
}

// paneCall performs a call herdr answers with pane_info {pane}.
func (c *Client) paneCall(ctx context.Context, method string, params any) (PaneInfo, error) {
	var r struct {
		Pane PaneInfo `json:"pane"`
	}
	err := c.call(ctx, method, params, "pane_info", &r)
	return r.Pane, err
}

// ClosePane closes a pane and kills its process.
func (c *Client) ClosePane(ctx context.Context, paneID string) error {
	return c.call(ctx, "pane.close", paneTarget{paneID}, "ok", nil)
}

// ReadRequest is the pane.read request. Lines 0 means herdr's default (80
// rows for recent sources, the whole screen otherwise).
type ReadRequest struct {
	PaneID string
	Source ReadSource
	Lines  int
	Format ReadFormat
	// KeepANSI asks herdr not to strip ANSI sequences (strip_ansi:false);
	// herdr strips by default.
	KeepANSI bool
}

// Read returns text from a pane's screen or scrollback.
func (c *Client) Read(ctx context.Context, req ReadRequest) (PaneRead, error) {
	params := struct {
		PaneID    string     `json:"pane_id"`
		Source    ReadSource `json:"source"`
		Lines     int        `json:"lines,omitempty"`
		Format    ReadFormat `json:"format,omitempty"`
		StripANSI *bool      `json:"strip_ansi,omitempty"`
	}{PaneID: req.PaneID, Source: req.Source, Lines: req.Lines, Format: req.Format}
	if req.KeepANSI {
		params.StripANSI = new(bool)
	}
	var r struct {
		Read PaneRead `json:"read"`
	}
	err := c.call(ctx, "pane.read", params, "pane_read", &r)
	return r.Read, err
}

// SendText writes text to the pane verbatim: no Enter, no bracketed paste.
// Never follow it with an Enter straight away (the two can coalesce into one
// read and an agent's paste heuristic then swallows the Enter).
func (c *Client) SendText(ctx context.Context, paneID, text string) error {
	params := struct {
		PaneID string `json:"pane_id"`
		Text   string `json:"text"`
	}{paneID, text}
	return c.call(ctx, "pane.send_text", params, "ok", nil)
}

// SendKeys sends named keys ("enter", "ctrl+c", "esc", ...), each as its own
// write. An unknown name fails with ErrInvalidKey and sends nothing.
func (c *Client) SendKeys(ctx context.Context, paneID string, keys ...string) error {
	params := struct {
		PaneID string   `json:"pane_id"`
		Keys   []string `json:"keys"`
	}{paneID, keys}
	if params.Keys == nil {
		params.Keys = []string{}
	}
	return c.call(ctx, "pane.send_keys", params, "ok", nil)
}

// SendInput writes text (bracketed as a paste when the program enabled
// bracketed paste) followed by keys, all in ONE write. Because text and
// Enter arrive together, agents may treat the Enter as part of the paste:
// for agents send text alone, wait ≥300 ms, then SendKeys "enter".
func (c *Client) SendInput(ctx context.Context, paneID, text string, keys ...string) error {
	params := struct {
		PaneID string   `json:"pane_id"`
		Text   string   `json:"text,omitempty"`
		Keys   []string `json:"keys,omitempty"`
	}{paneID, text, keys}
	return c.call(ctx, "pane.send_input", params, "ok", nil)
}

// ReportAgentRequest is the pane.report_agent request: a hook declaring the
// agent's state, which then overrides herdr's screen detection for that pane.
type ReportAgentRequest struct {
	PaneID string `json:"pane_id"`
	// Source names the reporter, e.g. "fleetd:claude". herdr ignores the
	// state from its own "herdr:claude" source.
	Source string `json:"source"`
	Agent  string `json:"agent"`
	// State is idle, working, blocked or unknown; herdr rejects "done"
	// with ErrInvalidRequest because done is derived, never reported.
	State   AgentStatus `json:"state"`
	Message string      `json:"message,omitempty"`
	// Seq orders reports per Source; herdr silently ignores a report whose
	// Seq is not above the last accepted one. 0 means "no seq".
	Seq              uint64 `json:"seq,omitempty"`
	AgentSessionID   string `json:"agent_session_id,omitempty"`
	AgentSessionPath string `json:"agent_session_path,omitempty"`
}

// ReportAgent sends a hook report. herdr answers ok even when it ignores the
// report (stale seq, reserved source), so success proves delivery only.
func (c *Client) ReportAgent(ctx context.Context, req ReportAgentRequest) error {
	return c.call(ctx, "pane.report_agent", req, "ok", nil)
}

// Agents lists the panes herdr considers agents.
func (c *Client) Agents(ctx context.Context) ([]AgentInfo, error) {
	var r struct {
		Agents []AgentInfo `json:"agents"`
	}
	err := c.call(ctx, "agent.list", struct{}{}, "agent_list", &r)
	return r.Agents, err
}

// Agent returns one agent by pane id or unique agent name (agent.get).
func (c *Client) Agent(ctx context.Context, target string) (AgentInfo, error) {
	return c.agentCall(ctx, "agent.get", agentTarget{target}, "agent_info")
}

// WaitOptions bound a server-side wait. Until defaults (in herdr) to idle,
// done and blocked. Always set Timeout: a focus-driven done→idle emits no
// event, so a wait without one can hang.
type WaitOptions struct {
	Until   []AgentStatus
	Timeout time.Duration
}

type waitWire struct {
	Until     []AgentStatus `json:"until,omitempty"`
	TimeoutMS *int64        `json:"timeout_ms,omitempty"`
}

func (w WaitOptions) wire() waitWire {
	out := waitWire{Until: w.Until}
	if w.Timeout > 0 {
		ms := w.Timeout.Milliseconds()
		out.TimeoutMS = &ms
	}
	return out
}

// PromptRequest is the agent.prompt request.
type PromptRequest struct {
	Target string
	Text   string
	// Wait, when set, keeps the call open until the agent reaches one of
	// Wait.Until (after first requiring a state change within 5 s).
	Wait *WaitOptions
}

// Prompt types Text into a recognised agent (bracketed when the program
// enabled it) and has herdr send Enter 300 ms later as a separate write.
// herdr answers before the Enter is sent unless Wait is set.
func (c *Client) Prompt(ctx context.Context, req PromptRequest) (AgentInfo, error) {
	params := struct {
		Target string    `json:"target"`
		Text   string    `json:"text"`
		Wait   *waitWire `json:"wait,omitempty"`
	}{Target: req.Target, Text: req.Text}
	if req.Wait != nil {
		w := req.Wait.wire()
		params.Wait = &w
		var cancel context.CancelFunc
		ctx, cancel = c.waitContext(ctx, req.Wait.Timeout)
		defer cancel()
	}
	return c.agentCall(ctx, "agent.prompt", params, "agent_prompted")
}

// WaitAgent blocks in herdr until the agent's status is one of opts.Until
// (immediately if it already is). A server-side timeout is ErrTimeout.
func (c *Client) WaitAgent(ctx context.Context, target string, opts WaitOptions) (AgentInfo, error) {
	params := struct {
		Target string `json:"target"`
		waitWire
	}{target, opts.wire()}
	ctx, cancel := c.waitContext(ctx, opts.Timeout)
	defer cancel()
	return c.agentCall(ctx, "agent.wait", params, "agent_info")
}

// FocusAgent focuses an agent's pane, marking a done agent seen.
func (c *Client) FocusAgent(ctx context.Context, target string) (AgentInfo, error) {
	return c.agentCall(ctx, "agent.focus", agentTarget{target}, "agent_info")
}

// agentCall performs a call herdr answers with {agent} in a result of type
// want (agent_info, or agent_prompted for agent.prompt).
func (c *Client) agentCall(ctx context.Context, method string, params any, want string) (AgentInfo, error) {
	var r struct {
		Agent AgentInfo `json:"agent"`
	}
	err := c.call(ctx, method, params, want, &r)
	return r.Agent, err
}

// waitContext gives a server-side wait room to finish: when the caller set
// no deadline, the default one starts after the server's own timeout.
func (c *Client) waitContext(ctx context.Context, serverTimeout time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok || serverTimeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, serverTimeout+c.timeout)
}

// CreateRequest is the workspace.create and tab.create request. WorkspaceID
// is used by CreateTab only (empty: the active workspace).
type CreateRequest struct {
	WorkspaceID string            `json:"workspace_id,omitempty"`
	CWD         string            `json:"cwd,omitempty"`
	Label       string            `json:"label,omitempty"`
	Focus       bool              `json:"focus,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
}

// CreateWorkspace creates a workspace whose root pane runs herdr's default
// shell with Env applied.
func (c *Client) CreateWorkspace(ctx context.Context, req CreateRequest) (WorkspaceCreated, error) {
	req.WorkspaceID = "" // not a workspace.create parameter
	var r WorkspaceCreated
	err := c.call(ctx, "workspace.create", req, "workspace_created", &r)
	return r, err
}

// CreateTab creates a tab whose root pane runs herdr's default shell.
func (c *Client) CreateTab(ctx context.Context, req CreateRequest) (TabCreated, error) {
	var r TabCreated
	err := c.call(ctx, "tab.create", req, "tab_created", &r)
	return r, err
}

type paneTarget struct {
	PaneID string `json:"pane_id"`
}

type agentTarget struct {
	Target string `json:"target"`
}

// request is the wire envelope. Params is never nil: herdr's schema requires
// the key even for methods without parameters.
type request struct {
	ID     string `json:"id"`
	Method string `json:"method"`
	Params any    `json:"params"`
}

type response struct {
	ID     *string         `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (c *Client) nextID() string {
	return "fleetd-" + strconv.FormatUint(c.ids.Add(1), 10)
}

// call performs one request on a fresh connection and decodes a result of
// type want into out (nil: only check the type).
func (c *Client) call(ctx context.Context, method string, params any, want string, out any) error {
	ctx, cancel := c.withDefaultDeadline(ctx)
	defer cancel()
	if c.timed != nil {
		start := time.Now()
		defer func() { c.timed(method, time.Since(start)) }()
	}
	id := c.nextID()
	conn, br, stop, err := c.open(ctx, id, method, params)
	if err != nil {
		return err
	}
	defer conn.Close()
	defer stop()
	line, err := readLine(br)
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("herdr %s: %w: connection closed without a response", method, ErrBadResponse)
	}
	if err != nil {
		return c.ioError(ctx, method, err)
	}
	return decodeResponse(line, id, method, want, out)
}

// open dials, arms the connection so that ctx's deadline or cancellation
// unblocks any read or write, and sends the request line. The caller must
// call stop once it no longer wants ctx to govern the connection.
func (c *Client) open(ctx context.Context, id, method string, params any) (net.Conn, *bufio.Reader, func() bool, error) {
	line, err := json.Marshal(request{ID: id, Method: method, Params: params})
	if err != nil {
		return nil, nil, nil, fmt.Errorf("herdr %s: encode request: %w", method, err)
	}
	if c.observe != nil {
		c.observe(method)
	}
	conn, err := c.dial(ctx, c.path)
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, nil, fmt.Errorf("herdr %s: %w", method, ctx.Err())
		}
		return nil, nil, nil, fmt.Errorf("herdr %s: dial %s: %w: %w", method, c.path, ErrNotRunning, err)
	}
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	if _, err := conn.Write(append(line, '\n')); err != nil {
		stop()
		conn.Close()
		return nil, nil, nil, c.ioError(ctx, method, err)
	}
	return conn, bufio.NewReader(conn), stop, nil
}

func (c *Client) withDefaultDeadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.timeout)
}

// ioError prefers the context's reason (deadline, cancel) over the raw I/O
// error it caused.
func (c *Client) ioError(ctx context.Context, method string, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("herdr %s: %w", method, ctx.Err())
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The socket deadline is ctx's deadline; its timer can fire a
		// moment before the context's own.
		return fmt.Errorf("herdr %s: %w", method, context.DeadlineExceeded)
	}
	return fmt.Errorf("herdr %s: %w", method, err)
}

// readLine reads one newline-terminated line; io.EOF means the peer closed
// before sending anything. A line cut short by EOF is still returned, so it
// fails JSON decoding with a clear message instead of a bare EOF.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxResponseBytes {
			return nil, fmt.Errorf("%w: line longer than %d bytes", ErrBadResponse, maxResponseBytes)
		}
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case len(line) > 0 && errors.Is(err, io.EOF):
			return line, nil
		default:
			return nil, err
		}
	}
}

// decodeResponse turns one response line into out or into an error. herdr
// replies to an unparseable request with an empty id, so an error with id ""
// is accepted as the answer to ours.
func decodeResponse(line []byte, id, method, want string, out any) error {
	var r response
	if err := json.Unmarshal(line, &r); err != nil {
		return fmt.Errorf("herdr %s: %w: %w", method, ErrBadResponse, err)
	}
	if r.ID == nil || (*r.ID != id && !(*r.ID == "" && r.Error != nil)) {
		return fmt.Errorf("herdr %s: %w: response id does not match request id %q", method, ErrBadResponse, id)
	}
	if r.Error != nil {
		return fmt.Errorf("herdr %s: %w", method, &APIError{Code: r.Error.Code, Message: r.Error.Message})
	}
	var tag struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(r.Result, &tag); err != nil || tag.Type != want {
		return fmt.Errorf("herdr %s: %w: result type %q, want %q", method, ErrBadResponse, tag.Type, want)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(r.Result, out); err != nil {
		return fmt.Errorf("herdr %s: %w: %w", method, ErrBadResponse, err)
	}
	return nil
}
