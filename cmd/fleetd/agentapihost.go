package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/fleetd/fleetd/agentapi"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
)

// AgentapiHostCmd runs the agentapi runtime: fleetd's herdr-protocol
// server whose panes each run under their own `agentapi server`, for a
// machine without herdr. `fleetd up --runtime agentapi` starts it as a
// process of its own, as herdr is one: the agents live on when fleetd up
// stops or is killed, and the next fleetd up finds them again.
type AgentapiHostCmd struct {
	Socket string `help:"Socket path to serve herdr's protocol on." required:"" type:"path"`
	Cols   int    `help:"Width of each agent's terminal." default:"120"`
	Rows   int    `help:"Height of each agent's terminal." default:"50"`
	Stop   bool   `help:"Stop the host serving --socket, and with it every agent it runs, then exit."`
}

// Run serves until interrupted, or stops a running host with --stop.
func (c *AgentapiHostCmd) Run(ctx context.Context) error {
	if c.Stop {
		return stopAgentapiHost(ctx, c.Socket)
	}
	bin, err := agentapi.LookPath("")
	if err != nil {
		return err
	}
	if _, err := agentapi.CheckVersion(ctx, bin); err != nil {
		return err
	}
	if err := os.WriteFile(hostPIDFile(c.Socket), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o600); err != nil {
		return fmt.Errorf("agentapi host: pid file: %w", err)
	}
	defer os.Remove(hostPIDFile(c.Socket))
	return herdrtest.Serve(ctx, herdrtest.Config{
		SocketPath: c.Socket, Cols: c.Cols, Rows: c.Rows,
		Start: func(spec herdrtest.StartSpec) (herdrtest.Terminal, error) {
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			return agentapi.StartTerminal(sctx, agentapi.TerminalConfig{
				Bin: bin, Argv: spec.Argv, Env: spec.Env, Dir: spec.Dir, Cols: spec.Cols, Rows: spec.Rows,
			})
		},
	}, os.Stdout)
}

// hostPIDFile is where a host serving socket writes its pid.
func hostPIDFile(socket string) string { return socket + ".pid" }

// stopAgentapiHost sends the host serving socket SIGTERM (it hangs up
// every pane: agentapi sends its agent SIGINT) and waits until it exited.
func stopAgentapiHost(ctx context.Context, socket string) error {
	raw, err := os.ReadFile(hostPIDFile(socket))
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no agentapi host serves %s (no %s)", socket, hostPIDFile(socket))
	}
	if err != nil {
		return err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil || pid <= 0 {
		return fmt.Errorf("agentapi host pid file %s: %q is not a pid", hostPIDFile(socket), raw)
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		return fmt.Errorf("stop agentapi host %d: %w", pid, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for syscall.Kill(pid, 0) == nil {
		select {
		case <-ctx.Done():
			return fmt.Errorf("agentapi host %d did not exit: %w", pid, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// Runtimes fleetd up chooses from.
const (
	runtimeAuto     = "auto"
	runtimeHerdr    = "herdr"
	runtimeAgentapi = "agentapi"
)

// runtimeChoice is the agent runtime fleetd up uses and why.
type runtimeChoice struct {
	Name   string // herdr or agentapi
	Reason string
	Socket string // the herdr-protocol socket ("" for herdr: resolved as herdr does)
}

// chooseRuntime picks this host's agent runtime: what --runtime names,
// or with auto, herdr when a herdr socket is configured or found, else
// agentapi when it is on PATH, else herdr (fleetd waits for its socket).
func chooseRuntime(runtime, herdrFlag string, getenv func(string) string, lookAgentapi func() error) (runtimeChoice, error) {
	switch runtime {
	case runtimeHerdr:
		return runtimeChoice{Name: runtimeHerdr, Reason: "--runtime herdr", Socket: herdrFlag}, nil
	case runtimeAgentapi:
		if herdrFlag != "" {
			return runtimeChoice{}, errors.New("--herdr names a herdr socket, --runtime agentapi runs no herdr: give one or the other")
		}
		if err := lookAgentapi(); err != nil {
			return runtimeChoice{}, fmt.Errorf("--runtime agentapi: %w", err)
		}
		return runtimeChoice{Name: runtimeAgentapi, Reason: "--runtime agentapi"}, nil
	case runtimeAuto, "":
	default:
		return runtimeChoice{}, fmt.Errorf("--runtime %q: want auto, herdr or agentapi", runtime)
	}
	if herdrFlag != "" {
		return runtimeChoice{Name: runtimeHerdr, Reason: "auto: --herdr (FLEET_HERDR_SOCKET) names a herdr socket", Socket: herdrFlag}, nil
	}
	for _, v := range []string{"HERDR_SOCKET_PATH", "HERDR_SESSION"} {
		if getenv(v) != "" {
			return runtimeChoice{Name: runtimeHerdr, Reason: "auto: " + v + " is set"}, nil
		}
	}
	path, err := herdrapi.SocketPath(getenv)
	if err == nil {
		if fi, serr := os.Stat(path); serr == nil && fi.Mode()&os.ModeSocket != 0 {
			return runtimeChoice{Name: runtimeHerdr, Reason: "auto: herdr's socket is at " + path}, nil
		}
	} else {
		path = "herdr's default path"
	}
	if lerr := lookAgentapi(); lerr == nil {
		return runtimeChoice{Name: runtimeAgentapi, Reason: "auto: no herdr socket at " + path + ", agentapi on PATH"}, nil
	}
	return runtimeChoice{Name: runtimeHerdr, Reason: "auto: no herdr socket at " + path + " yet and no agentapi on PATH: waiting for herdr"}, nil
}

// lookAgentapi finds a usable agentapi on PATH.
func lookAgentapi(ctx context.Context) func() error {
	return func() error {
		bin, err := agentapi.LookPath("")
		if err != nil {
			return err
		}
		_, err = agentapi.CheckVersion(ctx, bin)
		return err
	}
}

// ensureAgentapiHost returns the socket of this data dir's agentapi
// host, starting the host when none answers there. A host that answers
// is the one a previous fleetd up started: its agents are re-attached,
// not started again.
func ensureAgentapiHost(ctx context.Context, dataDir string) (socket string, reused bool, err error) {
	socket = agentapiHostSocket(dataDir)
	if hostAnswers(ctx, socket) {
		return socket, true, nil
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", false, err
	}
	exe, err := os.Executable()
	if err != nil {
		return "", false, err
	}
	logPath := filepath.Join(dataDir, "agentapi-host.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return "", false, fmt.Errorf("agentapi host log: %w", err)
	}
	defer logf.Close()
	cmd := exec.Command(exe, "agentapi-host", "--socket", socket)
	cmd.Stdout, cmd.Stderr = logf, logf
	// A session of its own: a Ctrl-C at fleetd up's terminal, or fleetd
	// up's end, is not the agents' end (as with herdr).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return "", false, fmt.Errorf("start the agentapi host: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.After(15 * time.Second)
	for !hostAnswers(ctx, socket) {
		select {
		case err := <-exited:
			return "", false, fmt.Errorf("the agentapi host exited at start (%v); its log is %s: %s", err, logPath, lastLines(logPath, 5))
		case <-deadline:
			cmd.Process.Kill()
			return "", false, fmt.Errorf("the agentapi host did not answer on %s within 15s; its log is %s", socket, logPath)
		case <-ctx.Done():
			cmd.Process.Kill()
			return "", false, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return socket, false, nil
}

// agentapiHostSocket is where the agentapi host of a data dir listens.
func agentapiHostSocket(dataDir string) string { return filepath.Join(dataDir, agentapi.HostSocket) }

// hostAnswers reports whether a herdr-protocol server answers on socket.
func hostAnswers(ctx context.Context, socket string) bool {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := herdrapi.New(socket).Ping(ctx)
	return err == nil
}

// lastLines is the end of a small log file, for an error message.
func lastLines(path string, n int) string {
	raw, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
