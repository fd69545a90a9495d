package doctor

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/fleetd/fleetd/agentapi"
	"github.com/fleetd/fleetd/claudehook"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/roles"
)

// checkBinary says which fleetd this is: the binary is all a host needs
// (no Go toolchain), and its hook binary beside it keeps the agents'
// hooks fast.
func checkBinary(_ context.Context, cfg Config) []Result {
	const what = "fleetd"
	detail := fmt.Sprintf("fleetd %s (%s/%s, built with %s)", cfg.Version, runtime.GOOS, runtime.GOARCH, runtime.Version())
	if cfg.Executable == "" {
		return []Result{ok(what, detail+": one binary, no Go toolchain needed")}
	}
	detail += " at " + cfg.Executable + ": one binary, no Go toolchain needed"
	if hook := claudehook.HookBeside(cfg.Executable); hook != "" {
		return []Result{ok(what, detail+"; its hook binary "+hook+" beside it")}
	}
	// Without it every agent's hooks run as `fleetd hook`: the whole of
	// fleetd starting twice a turn (claudehook.SettingsConfig.Hook).
	return []Result{warn(what, detail+"; no "+claudehook.HookName+" beside it, so agents' hooks start the whole of fleetd twice a turn",
		"put "+claudehook.HookName+" (cmd/fleetd-hook, built and shipped with fleetd) in "+filepath.Dir(cfg.Executable))}
}

// herdrFix is what to do when this host's herdr is not there.
const herdrFix = "start herdr (it listens on HERDR_SOCKET_PATH, or ~/.config/herdr/herdr.sock) or pass its socket with --herdr (FLEET_HERDR_SOCKET), or put agentapi on PATH ('fleetd up --runtime agentapi'); " +
	"'fleetd dev-herdr --socket PATH' runs fleetd's built-in one; a host without panes runs 'fleetd up --no-herdr' (check it with --no-herdr)"

// checkHerdr finds this host's herdr as `fleetd up` does and asks it its
// version and protocol (ping).
func checkHerdr(ctx context.Context, cfg Config) []Result {
	const what = "herdr"
	if cfg.NoHerdr {
		return []Result{skip(what, "--no-herdr: this host drives no panes", "drop --no-herdr on a host whose agents run in herdr")}
	}
	path := cfg.Herdr
	if path == "" {
		var err error
		if path, err = herdrapi.SocketPath(os.Getenv); err != nil {
			return []Result{fail(what, oneLine(err), herdrFix)}
		}
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	pong, err := herdrapi.New(path, herdrapi.WithTimeout(cfg.Timeout)).Check(ctx)
	switch {
	case err == nil:
		return []Result{ok(what, fmt.Sprintf("herdr %s (protocol %d) at %s", pong.Version, pong.Protocol, path))}
	case errors.Is(err, herdrapi.ErrProtocolMismatch):
		return []Result{fail(what, oneLine(err), fmt.Sprintf("run a herdr that speaks protocol %d (herdr 0.8.x)", herdrapi.Protocol))}
	}
	detail := fmt.Sprintf("herdr's socket %s does not answer: %s", path, oneLine(err))
	if _, serr := os.Stat(path); errors.Is(serr, fs.ErrNotExist) {
		detail = "no herdr socket at " + path
	}
	// No herdr: 'fleetd up' (--runtime auto) runs the agents under
	// agentapi when it is on PATH, through its agentapi host.
	host := filepath.Join(cfg.DataDir, agentapi.HostSocket)
	if pong, herr := herdrapi.New(host, herdrapi.WithTimeout(cfg.Timeout)).Check(ctx); herr == nil {
		return []Result{ok(what, fmt.Sprintf("no herdr (%s); the agents run under agentapi: fleetd's agentapi host (protocol %d) at %s", detail, pong.Protocol, host))}
	}
	if bin, lerr := agentapi.LookPath(""); lerr == nil {
		v, verr := agentapi.CheckVersion(ctx, bin)
		if verr != nil {
			return []Result{fail(what, detail+"; and "+oneLine(verr), "install agentapi "+agentapi.TestedVersion+" (https://github.com/coder/agentapi/releases), or start herdr")}
		}
		return []Result{ok(what, fmt.Sprintf("no herdr (%s); agentapi %s on PATH (%s): 'fleetd up' runs the agents under it (--runtime auto)", detail, v, bin))}
	}
	return []Result{fail(what, detail, herdrFix)}
}

// checkRoles loads the roles file as `fleetd up` does, checks that every
// role's boundary holds in this environment, and that each role's command
// is on PATH at the version fleetd was tested with.
func checkRoles(ctx context.Context, cfg Config) []Result {
	c, err := roles.Load(cfg.RolesFile)
	if err != nil {
		return []Result{
			fail("roles file", oneLine(err), "fix "+cfg.RolesFile+" (docs/roles.md has every field), then run 'fleetd doctor --roles "+cfg.RolesFile+"' again"),
			skip("role commands", "not checked: the roles file does not load", "fix the roles file first"),
		}
	}
	var out []Result
	if cfg.RolesFile == "" {
		out = append(out, skip("roles file", "none given: checking the built-in roles ("+strings.Join(c.Names(), ", ")+")",
			"pass --roles FILE (or FLEET_ROLES), as 'fleetd up' gets it, to check yours"))
	} else {
		out = append(out, ok("roles file", fmt.Sprintf("%s: %d roles (%s), each valid", cfg.RolesFile, len(c.Roles), strings.Join(c.Names(), ", "))))
	}
	out = append(out, checkBoundary(c, os.Environ()))
	return append(out, checkCommands(ctx, cfg, c)...)
}

// checkBoundary looks at what a role's pane would carry here: the
// environment herdr's panes inherit (this shell's, when herdr was started
// from it) with the role's launch environment on top. roles.Parse has
// already refused a role whose own settings cross its boundary; what is
// left is a variable of this environment, which the gateway's watcher
// would report as a violation on every agent of the role.
func checkBoundary(c roles.Config, environ []string) Result {
	const what = "boundary"
	env := map[string]string{}
	for _, kv := range environ {
		if k, v, found := strings.Cut(kv, "="); found {
			env[k] = v
		}
	}
	var bad []string
	for _, name := range c.Names() {
		r, _ := c.Get(name)
		if r.Sandbox != "" {
			continue // the sandbox passes the pane only its guarded environment
		}
		pane := maps.Clone(env)
		maps.Copy(pane, r.LaunchEnv())
		if err := r.CheckEnv(pane); err != nil {
			bad = append(bad, strings.TrimPrefix(oneLine(err), roles.ErrBoundary.Error()+": "))
		}
	}
	if len(bad) > 0 {
		return warn(what, "in this environment "+strings.Join(bad, "; "),
			"unset those variables where herdr starts (its panes inherit its environment), or give the roles a sandbox")
	}
	return ok(what, fmt.Sprintf("every role's pane stays on its side of the subscription boundary in this environment (%d roles)", len(c.Roles)))
}

// version is what one executable's --version said.
type version struct {
	v   string
	err error
}

// checkCommands finds each role's command (and its sandbox's) on PATH and
// asks the kind's CLI its version, each executable once.
func checkCommands(ctx context.Context, cfg Config, c roles.Config) []Result {
	type found struct {
		role          roles.Role
		path, sandbox string
		cmdErr, sbErr error
		tested        TestedCLI
		isKind        bool
	}
	var all []found
	toAsk := map[string]TestedCLI{}
	for _, name := range c.Names() {
		r, _ := c.Get(name)
		f := found{role: r}
		if len(r.Command) == 0 {
			f.cmdErr = errors.New("the role has no command")
		} else {
			f.path, f.cmdErr = exec.LookPath(r.Command[0])
			f.tested, f.isKind = TestedFor(r.Kind)
			f.isKind = f.isKind && filepath.Base(r.Command[0]) == f.tested.Bin
			if f.cmdErr == nil && f.isKind {
				toAsk[f.path] = f.tested
			}
		}
		if r.Sandbox != "" {
			if sb, err := c.Sandbox(r.Sandbox); err == nil && len(sb.Launch) > 0 && !strings.Contains(sb.Launch[0], "{") {
				f.sandbox = sb.Launch[0]
				_, f.sbErr = exec.LookPath(sb.Launch[0])
			}
		}
		all = append(all, f)
	}
	versions := map[string]version{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for path, t := range toAsk {
		wg.Go(func() {
			v, err := cliVersion(ctx, path, t, cfg.Timeout)
			mu.Lock()
			versions[path] = version{v, err}
			mu.Unlock()
		})
	}
	wg.Wait()

	out := make([]Result, 0, len(all))
	for _, f := range all {
		what := "role " + f.role.Name
		cmd := ""
		if len(f.role.Command) > 0 {
			cmd = f.role.Command[0]
		}
		switch {
		case f.cmdErr != nil && f.isKind:
			out = append(out, fail(what, fmt.Sprintf("%s (%s) not found on PATH", cmd, f.tested.Name),
				fmt.Sprintf("install %s %s (%s) where herdr's panes find it (they inherit herdr's PATH)", f.tested.Name, f.tested.Version, f.tested.Install())))
		case f.cmdErr != nil:
			out = append(out, fail(what, fmt.Sprintf("command %q: %s", cmd, oneLine(f.cmdErr)), "install it, or fix the role's \"command\" in the roles file"))
		case f.sbErr != nil:
			out = append(out, fail(what, fmt.Sprintf("sandbox %q: %s not found on PATH", f.role.Sandbox, f.sandbox), "install "+f.sandbox+", or drop the role's \"sandbox\""))
		case !f.isKind:
			out = append(out, ok(what, fmt.Sprintf("%s at %s (not the %s CLI itself: its version is not checked)", cmd, f.path, kindName(f.role.Kind))))
		default:
			v := versions[f.path]
			t := f.tested
			switch {
			case v.err != nil:
				out = append(out, warn(what, fmt.Sprintf("%s at %s did not say its version: %s", t.Bin, f.path, oneLine(v.err)),
					fmt.Sprintf("run '%s --version' by hand; fleetd was tested with %s %s", t.Bin, t.Name, t.Version)))
			case v.v != t.Version:
				out = append(out, warn(what, fmt.Sprintf("%s %s at %s; fleetd was tested with %s", t.Name, v.v, f.path, t.Version),
					"another release may draw its screen or write its hooks differently; the tested one: "+t.Install()))
			default:
				out = append(out, ok(what, fmt.Sprintf("%s %s at %s (the release fleetd was tested with)", t.Name, v.v, f.path)))
			}
		}
	}
	return out
}

func kindName(kind string) string {
	if t, ok := TestedFor(kind); ok {
		return t.Name
	}
	return kind
}

// cliVersion runs `<path> --version` and finds the release in what it
// printed (on stdout or, as Pi does, stderr).
func cliVersion(ctx context.Context, path string, t TestedCLI, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "--version")
	cmd.Env = append(os.Environ(), t.Env...)
	// A child the CLI leaves behind holding its output open must not
	// hold the check past its time.
	cmd.WaitDelay = 500 * time.Millisecond
	out, err := cmd.CombinedOutput()
	if v := ParseVersion(string(out)); v != "" {
		return v, nil
	}
	switch {
	case ctx.Err() != nil:
		return "", fmt.Errorf("no answer within %v", timeout)
	case err != nil:
		return "", err
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return "", fmt.Errorf("no version in %q", first)
}

// Disk room: below diskFail free, JetStream is about to refuse writes
// (every send then fails with store_full); below diskWarn, a busy fleet's
// log fills it within days at the default retention (7d).
const (
	diskFail = 256 << 20
	diskWarn = 2 << 30
)

// checkDisk looks at the file system the store lives on: the data
// directory, or the nearest directory above it that exists (`fleetd up`
// creates the rest).
func checkDisk(_ context.Context, cfg Config) []Result {
	const what = "disk"
	if cfg.DataDir == "" {
		return []Result{skip(what, "no data directory given", "pass --data-dir (FLEET_DATA_DIR) as 'fleetd up' gets it")}
	}
	dir, note := cfg.DataDir, ""
	for {
		if _, err := os.Stat(dir); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			break
		}
		dir, note = parent, " (not there yet: 'fleetd up' creates it)"
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return []Result{warn(what, fmt.Sprintf("cannot read the file system of %s: %s", dir, oneLine(err)), "check that "+cfg.DataDir+" is where you mean the store to be")}
	}
	if err := unix.Access(dir, unix.W_OK); err != nil {
		return []Result{fail(what, fmt.Sprintf("%s is not writable by this user: %s", dir, oneLine(err)), "give this user the directory, or pass another --data-dir (FLEET_DATA_DIR)")}
	}
	free := uint64(st.Bavail) * uint64(st.Bsize)
	detail := fmt.Sprintf("%s free for the store in %s%s", bytesText(free), cfg.DataDir, note)
	switch {
	case free < diskFail:
		return []Result{fail(what, detail, "free space there, or move the store (--data-dir); 'fleetd up --retain' and --max-store bound what the log keeps")}
	case free < diskWarn:
		return []Result{warn(what, detail, "a busy fleet's log outgrows this: free space, or bound it with 'fleetd up --retain' and --max-store")}
	}
	return []Result{ok(what, detail)}
}

// bytesText is n in the largest binary unit that keeps a digit before
// the point.
func bytesText(n uint64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f := float64(n)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}
