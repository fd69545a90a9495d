package herdrtest

import (
	"errors"
	"os"
	"strings"
	"time"
)

// Validator checks herdr wire lines against herdr's schema.
// herdrschema.Validator is the implementation tests use; it lives in its
// own package so programs embedding this server do not link a schema
// engine.
type Validator interface {
	ValidateRequest(raw []byte) error
	ValidateResponse(raw []byte) error
	ValidateEvent(raw []byte) error
}

// Config configures a fake herdr Server. The zero value plus a SocketPath is
// a faithful herdr 0.8.0; the durations exist so tests can speed up
// herdr's fixed pacing where the pacing itself is not under test.
type Config struct {
	// SocketPath is where the server listens (required). The socket is
	// created with mode 0600, as herdr does.
	SocketPath string
	// Shell is the command a pane started by workspace.create, tab.create
	// or pane.split runs. Default: /bin/sh.
	Shell []string
	// Env is the base environment of every pane process, before the
	// caller's env and herdr's own pane variables. Default: this process's
	// environment without HERDR_* variables and CODEX_THREAD_ID, with
	// TERM=xterm-256color.
	Env []string
	// BinPath is exported to panes as HERDR_BIN_PATH; omitted when empty.
	BinPath string
	// Version and Protocol are what ping reports (default "0.8.0", 20).
	// A different Protocol lets tests exercise a client's version check.
	Version  string
	Protocol int
	// Cols and Rows are the size of each pane's PTY and of the terminal
	// emulator behind it, whose screen pane.read and the screen rules read
	// (default 80×24).
	Cols, Rows int
	// PollInterval paces subscriptions: each entry emits at most one event
	// per interval (herdr: 100 ms).
	PollInterval time.Duration
	// DetectInterval paces foreground-process and screen detection (herdr:
	// about 100 ms).
	DetectInterval time.Duration
	// IdleConfirmations is how many consecutive idle screen checks a
	// working agent needs before it is idle (herdr: 3).
	IdleConfirmations int
	// SubmitDelay is the gap between agent.prompt's text and its Enter
	// (herdr: 300 ms).
	SubmitDelay time.Duration
	// SeenOnCompletion marks an agent that finishes a turn as seen, so it
	// reports idle instead of done, as herdr does for the focused pane of
	// the active tab in a focused terminal. Default false: done.
	SeenOnCompletion bool
	// OutputLimit bounds each pane's raw output log, what Output returns
	// (default 1 MiB). The emulator's scrollback is bounded separately, at
	// the 1000 rows pane.read can return.
	OutputLimit int
	// FirstLineTimeout and WriteTimeout are herdr's 5 s limits for reading
	// a request and for a subscriber to take a line.
	FirstLineTimeout time.Duration
	WriteTimeout     time.Duration
	// KillGrace is how long Close and pane.close wait after SIGHUP before
	// SIGKILL (default 1 s).
	KillGrace time.Duration
	// Start runs a pane's program (default StartPTY: a PTY of this
	// process). Package agentapi's starts it under an agentapi server.
	Start func(StartSpec) (Terminal, error)
	// Validator, when set, checks every request read and every line
	// written against herdr's schema; problems go to OnInvalid.
	Validator Validator
	// OnInvalid receives schema violations (default: ignored).
	OnInvalid func(error)
}

func (c *Config) setDefaults() {
	if len(c.Shell) == 0 {
		c.Shell = []string{"/bin/sh"}
	}
	if c.Start == nil {
		c.Start = StartPTY
	}
	if c.Env == nil {
		c.Env = defaultEnv(os.Environ())
	}
	if c.Version == "" {
		c.Version = "0.8.0"
	}
	if c.Protocol == 0 {
		c.Protocol = 20
	}
	if c.Cols == 0 {
		c.Cols = 80
	}
	if c.Rows == 0 {
		c.Rows = 24
	}
	setDur(&c.PollInterval, 100*time.Millisecond)
	setDur(&c.DetectInterval, 100*time.Millisecond)
	setDur(&c.SubmitDelay, 300*time.Millisecond)
	setDur(&c.FirstLineTimeout, 5*time.Second)
	setDur(&c.WriteTimeout, 5*time.Second)
	setDur(&c.KillGrace, time.Second)
	if c.IdleConfirmations == 0 {
		c.IdleConfirmations = 3
	}
	if c.OutputLimit == 0 {
		c.OutputLimit = 1 << 20
	}
	if c.OnInvalid == nil {
		c.OnInvalid = func(error) {}
	}
}

func setDur(d *time.Duration, def time.Duration) {
	if *d == 0 {
		*d = def
	}
}

// Validate reports every problem with the configuration at once.
func (c *Config) Validate() error {
	var errs []error
	if c.SocketPath == "" {
		errs = append(errs, errors.New("herdrtest: SocketPath is required"))
	}
	if len(c.Shell) == 0 || c.Shell[0] == "" {
		errs = append(errs, errors.New("herdrtest: Shell needs a command"))
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{
		{"PollInterval", c.PollInterval}, {"DetectInterval", c.DetectInterval}, {"SubmitDelay", c.SubmitDelay},
		{"FirstLineTimeout", c.FirstLineTimeout}, {"WriteTimeout", c.WriteTimeout}, {"KillGrace", c.KillGrace},
	} {
		if d.d < 0 {
			errs = append(errs, errors.New("herdrtest: "+d.name+" is negative"))
		}
	}
	if c.Cols <= 0 || c.Rows <= 0 || c.OutputLimit <= 0 || c.IdleConfirmations <= 0 {
		errs = append(errs, errors.New("herdrtest: Cols, Rows, OutputLimit and IdleConfirmations must be positive"))
	}
	return errors.Join(errs...)
}

// defaultEnv drops the variables herdr sets itself (a test running inside
// a herdr pane must not leak its own pane's identity into fake panes) and
// the one herdr removes.
func defaultEnv(environ []string) []string {
	var out []string
	term := false
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "HERDR_") || k == "CODEX_THREAD_ID" {
			continue
		}
		if k == "TERM" {
			kv, term = "TERM=xterm-256color", true
		}
		out = append(out, kv)
	}
	if !term {
		out = append(out, "TERM=xterm-256color")
	}
	return out
}
