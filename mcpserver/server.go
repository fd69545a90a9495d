package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/inbox"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/projections"
)

// Fleet is what the server needs of fleetd. *leadshim.Client implements
// it; tests may pass a fake with the same semantics.
type Fleet interface {
	// Send queues a turn and waits for its end.
	Send(ctx context.Context, m leadshim.Message) (leadshim.Envelope, error)
	// SendAsync queues a turn and returns its id at once.
	SendAsync(ctx context.Context, m leadshim.Message) (leadshim.Accepted, error)
	// Turn reads a turn, long-polling up to wait until it is final.
	Turn(ctx context.Context, id, wait string) (leadshim.Envelope, error)
	Roster(ctx context.Context) ([]projections.Agent, error)
	Sessions(ctx context.Context) ([]projections.Session, error)
	Roles(ctx context.Context) ([]leadshim.RoleState, error)
	// Inbox pulls up to max of agent's messages, long-polling up to wait.
	Inbox(ctx context.Context, agent string, max int, wait string) (leadshim.InboxBatch, error)
	// Ack acknowledges agent's messages.
	Ack(ctx context.Context, agent string, ids []string) (leadshim.InboxAcked, error)
	// Post posts a message to agent's inbox.
	Post(ctx context.Context, agent string, p leadshim.InboxPost) (inbox.Message, error)
	// Context lists a job's context items, all or those selectors name.
	Context(ctx context.Context, job string, selectors []string) ([]leadshim.ContextItem, error)
	// PutContext adds an item to a job's context store.
	PutContext(ctx context.Context, job string, p leadshim.ContextPut) (leadshim.ContextItem, error)
	// Answer answers the dialog an agent is blocked on.
	Answer(ctx context.Context, agent string, option int, from string) (leadshim.DialogAnswer, error)
	// Spawn starts an agent on the shim's host.
	Spawn(ctx context.Context, req leadshim.SpawnRequest) (events.AgentRegistered, error)
	// StartJob runs a plan (or resumes a job) in the background.
	StartJob(ctx context.Context, j leadshim.JobStart) (leadshim.JobAccepted, error)
	// Job reads a job's state, long-polling up to wait while it runs.
	Job(ctx context.Context, job, wait string) (leadshim.JobState, error)
}

var _ Fleet = (*leadshim.Client)(nil)

// Config is what the server runs with.
type Config struct {
	// Fleet is the local fleetd (a leadshim.Client).
	Fleet Fleet
	// Agent is the agent this server serves: the sender of its sends and
	// replies, the owner of the inbox it reads.
	Agent string
	// Role is the served agent's role when it is no agent of the roster
	// (a lead outside fleetd): what its role allows (may_spawn) decides
	// its spawns. A registered agent's role is the roster's; a different
	// one here is refused.
	Role string
	// MaxText bounds a text the server forwards. Default
	// leadshim.DefaultMaxText (the shim's own default), so an oversize
	// text is refused before it is sent anywhere.
	MaxText int
	// Version is the server's version in the MCP handshake.
	Version string
	// Logger hears about the server's protocol traffic problems.
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.MaxText == 0 {
		c.MaxText = leadshim.DefaultMaxText
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	if c.Fleet == nil {
		errs = append(errs, fmt.Errorf("%w: no Fleet", ErrConfig))
	}
	if c.Agent == "" {
		errs = append(errs, fmt.Errorf("%w: no agent id (set FLEET_AGENT_ID or --agent)", ErrConfig))
	} else if err := events.ValidAgentID(c.Agent); err != nil {
		errs = append(errs, fmt.Errorf("%w: %w", ErrConfig, err))
	}
	if c.Role != "" {
		if err := events.ValidRole(c.Role); err != nil {
			errs = append(errs, fmt.Errorf("%w: role: %w", ErrConfig, err))
		}
	}
	if c.MaxText < 0 {
		errs = append(errs, fmt.Errorf("%w: negative MaxText", ErrConfig))
	}
	return errors.Join(errs...)
}

// Server is the MCP server of one agent. Build it with New, serve it with
// Run (stdio for `fleetd mcp`) or MCP().Connect (tests, in memory).
type Server struct {
	cfg Config
	mcp *mcp.Server

	mu sync.Mutex
	// senders remembers who sent the messages inbox handed out, so reply
	// needs only the message id.
	senders map[string]string
}

// New returns a server with every tool registered. It does no I/O.
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, senders: map[string]string{}}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "fleetd", Title: "fleetd", Version: cfg.Version}, &mcp.ServerOptions{
		Instructions: instructions(cfg.Agent),
		Logger:       cfg.Logger,
	})
	s.addTools()
	s.addInboxTools()
	s.addContextTool()
	s.addJobTools()
	s.addAnswerTool()
	return s, nil
}

// MCP is the SDK server, for transports other than stdio.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// Run serves one client over t until it disconnects or ctx ends.
func (s *Server) Run(ctx context.Context, t mcp.Transport) error {
	return s.mcp.Run(ctx, t)
}

func instructions(agent string) string {
	return "You are agent " + agent + " in a fleetd fleet. Delegate with `send` (to an agent id, role:<role> " +
		"or session:<name>); it blocks until the reply unless you ask for async (then `wait` for the turn id) or notify " +
		"(the reply comes to your inbox). Messages for you wait in your inbox: when fleetd tells you so, call `inbox`, " +
		"handle each message, answer with `reply` (which also acknowledges it) or acknowledge it on your next `inbox` call. " +
		"Look before you route: `roster`, `roles`, `sessions`. Run a multi-step plan with `orchestrate`; start a new agent with " +
		"`spawn` when your role may spawn its role. A worker blocked on a permission dialog shows it in `roster`: answer it with `answer`."
}

// result is a tool's answer: v as indented JSON text, which a model reads
// as well as a program does.
func result(v any) (*mcp.CallToolResult, any, error) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, nil, fmt.Errorf("encode result: %w", err)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
}

// toolError words an error of fleetd so a model knows what to change: the
// shim's code and message, and for a timeout the turn id to wait on.
func toolError(what string, err error) error {
	var ce *leadshim.ClientError
	switch {
	case errors.As(err, &ce) && ce.Status == http.StatusGatewayTimeout && ce.Body.ID != "":
		return fmt.Errorf("%s: timed out (%s); the turn %s goes on: call wait with id %q to pick it up", what, ce.Body.Message, ce.Body.ID, ce.Body.ID)
	case errors.As(err, &ce):
		return fmt.Errorf("%s: fleetd refused it (%d %s): %s", what, ce.Status, ce.Body.Code, ce.Body.Message)
	case errors.Is(err, leadshim.ErrUnreachable):
		return fmt.Errorf("%s: fleetd is not reachable (is `fleetd up` running?): %w", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// checkText refuses what the shim would refuse anyway, before sending it:
// an empty or an oversize text.
func (s *Server) checkText(field, text string) error {
	if strings.TrimSpace(text) == "" {
		return fmt.Errorf("%s is empty: say what you want done", field)
	}
	if len(text) > s.cfg.MaxText {
		return fmt.Errorf("%s is %d bytes, over the limit of %d: write long material to a file and send its path instead", field, len(text), s.cfg.MaxText)
	}
	return nil
}
