package main

import (
	"errors"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/alecthomas/kong"
	"github.com/nats-io/nats.go"

	"github.com/fleetd/fleetd/agentapi"
	"github.com/fleetd/fleetd/doctor"
	"github.com/fleetd/fleetd/gateway"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/natsauth"
	"github.com/fleetd/fleetd/orchestrator"
	"github.com/fleetd/fleetd/roles"
)

// maxCause bounds the cause on a command's error line: a pane's screen
// or a server's answer says enough in its first few hundred characters.
const maxCause = 400

// errorLine is the one line a failed command prints on stderr:
//
//	fleetd <command>: <what failed>: <cause> — <what to do>
//
// A fault `fleetd doctor` checks for (the roles file, herdr, NATS and
// FLEET, the lead shim) is said as the doctor says it, with its fix
// (doctor.Explain); a few only a command meets are said here; any other
// error is its own text, on one line.
func errorLine(kctx *kong.Context, g *Globals, err error) string {
	prefix := "fleetd"
	if name := commandName(kctx); name != "" {
		prefix += " " + name
	}
	in, runtime := inputs(kctx, g)
	e, ok := explain(err, in, runtime)
	if ok && commandName(kctx) == "up" && (errors.Is(err, natsauth.ErrNoServer) || errors.Is(err, nats.ErrNoServers)) && g.NATS != "" {
		// up itself is the fabric: the NATS it was told to use is down.
		e.Fix = "start the NATS at " + g.NATS + ", or leave --nats (FLEET_NATS_URL) out and 'fleetd up' runs its own"
	}
	if !ok {
		msg := doctor.OneLine(err)
		// An error that already starts with the command's name
		// ("doctor: 2 of 10 checks failed") does not say it twice.
		if name := commandName(kctx); name != "" {
			msg = strings.TrimPrefix(msg, name+": ")
		}
		return prefix + ": " + msg
	}
	line := prefix + ": " + e.What
	if e.Cause != "" && !strings.Contains(e.What, e.Cause) {
		line += ": " + shorten(e.Cause, maxCause)
	}
	if e.Fix != "" {
		line += " — " + e.Fix
	}
	return line
}

// explain is doctor.Explain, then the faults of packages the doctor does
// not read (agentapi, the gateway, the bridge's spawn, the orchestrator)
// said here; runtime is the command's --runtime ("" when it has none).
func explain(err error, in doctor.Inputs, runtime string) (doctor.Explanation, bool) {
	if e, ok := doctor.Explain(err, in); ok {
		return e, true
	}
	switch {
	case errors.Is(err, agentapi.ErrNotInstalled), errors.Is(err, agentapi.ErrVersion):
		// agentapi's error ends with how to install it ("; install …").
		msg := doctor.OneLine(err)
		what, fix, found := strings.Cut(msg, "; install ")
		if found {
			fix = "install " + fix
		} else {
			fix = "install agentapi " + agentapi.TestedVersion + " (https://github.com/coder/agentapi/releases), or run the agents in herdr (--runtime herdr)"
		}
		return doctor.Explanation{What: what, Fix: fix}, true
	case errors.Is(err, gateway.ErrNoOwner):
		// No herdr at all is the fault to fix first; else the error
		// ends with what to do (": start 'fleetd up' here, …").
		if in.Herdr != "" && !exists(in.Herdr) && runtime != runtimeAgentapi {
			return doctor.ExplainHerdr(in.Herdr, nil), true
		}
		msg := doctor.OneLine(err)
		if i := strings.LastIndex(msg, ": "); i >= 0 {
			return doctor.Explanation{What: msg[:i], Fix: msg[i+2:]}, true
		}
	case errors.Is(err, orchestrator.ErrInvalidPlan), errors.Is(err, leadshim.ErrBadPlan):
		return doctor.Explanation{What: doctor.OneLine(err), Fix: "fix the plan (its schema: go doc github.com/fleetd/fleetd/orchestrator, as 'fleetd orchestrate --help' says)"}, true
	case errors.Is(err, gateway.ErrNotProvisioned):
		return doctor.Explanation{What: "the fabric is not provisioned", Cause: doctor.OneLine(err), Fix: doctor.ProvisionFix()}, true
	case errors.Is(err, roles.ErrBoundary):
		msg := doctor.OneLine(err)
		if _, after, found := strings.Cut(msg, roles.ErrBoundary.Error()+": "); found {
			msg = after
		}
		return doctor.Explanation{What: "the pane would cross the subscription boundary", Cause: msg,
			Fix: "drop those variables from --env; a role's provider key or base URL comes from its env_class (docs/roles.md)"}, true
	case errors.Is(err, herdrbridge.ErrNotStarted):
		fix := "'fleetd doctor"
		if in.RolesFile != "" {
			fix += " --roles " + in.RolesFile
		}
		fix += "' checks that each role's command is on the PATH herdr's panes get, at the release fleetd was tested with"
		msg := doctor.OneLine(err)
		if _, after, found := strings.Cut(msg, herdrbridge.ErrNotStarted.Error()+": "); found {
			msg = after
		}
		return doctor.Explanation{What: "the agent did not start", Cause: msg, Fix: fix}, true
	}
	return doctor.Explanation{}, false
}

// commandName is the command that ran, its words without arguments:
// "send", "hooks settings".
func commandName(kctx *kong.Context) string {
	if kctx == nil {
		return ""
	}
	var words []string
	for _, p := range kctx.Path {
		if p.Command != nil {
			words = append(words, p.Command.Name)
		}
	}
	return strings.Join(words, " ")
}

// inputs are what the command was pointed at: the global flags, and its
// own --roles, --herdr and --runtime when it has them.
func inputs(kctx *kong.Context, g *Globals) (in doctor.Inputs, runtime string) {
	in = doctor.Inputs{NATSURL: g.NATS, Creds: g.Creds, NATSToken: g.natsToken(), ShimURL: g.URL}
	if kctx == nil {
		return in, ""
	}
	for _, f := range kctx.Flags() {
		v, _ := kctx.FlagValue(f).(string)
		switch f.Name {
		case "roles":
			in.RolesFile = v
		case "herdr":
			in.Herdr = v
		case "runtime":
			runtime = v
		}
	}
	return in, runtime
}

// exists reports whether path is there.
func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// shorten cuts s to at most n runes, marking the cut.
func shorten(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
