package doctor

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/natsauth"
	"github.com/fleetd/fleetd/roles"
)

// Explanation is a failed command's error as the doctor would say it:
// what failed, its cause in short, and what to do. A fault the doctor
// checks for gets the doctor's fix, so a command and `fleetd doctor`
// say the same thing about it.
type Explanation struct {
	// What names what failed: "NATS at nats://127.0.0.1:4222 does not
	// answer", "no herdr socket at /run/herdr.sock".
	What string
	// Cause is the innermost error, on one line ("connection refused").
	Cause string
	// Fix says what to do.
	Fix string
}

// Inputs are what the failed command was pointed at, as its flags say:
// an explanation names them, and a roles file is read again to learn
// whether it is the fault.
type Inputs struct {
	NATSURL   string
	Creds     string
	NATSToken string
	ShimURL   string
	// Herdr is the herdr socket; "" is the one herdr resolves.
	Herdr string
	// RolesFile is the roles file; "" is the built-in roles.
	RolesFile string
}

// The doctor's fixes, for the faults a command meets too. The checks in
// local.go and fabric.go say the same (explain_test.go holds them equal).
const (
	natsDownFix  = "start the fabric here ('fleetd up'), or point --nats (FLEET_NATS_URL) at its NATS"
	provisionFix = "run 'fleetd provision' (with the admin's key, under 'fleetd auth'), or 'fleetd up', which creates it when its key may"
	jetStreamFix = "enable JetStream on the server (fleetd's own NATS, 'fleetd up', has it)"
	shimDownFix  = "start the fabric here ('fleetd up' serves the shim on 127.0.0.1:8765), or point --url (FLEET_URL) at it"
	shimTokenFix = "pass the shim's token: --token (FLEET_TOKEN)"
	boundaryFix  = "unset those variables where herdr starts (its panes inherit its environment), or give the roles a sandbox"
	shimLogFix   = "see the gateway's log"
)

// natsAuthFix is the fix when NATS refuses the identity as presents.
func natsAuthFix(as string) string {
	return "NATS refused " + as + ": pass this host's key from 'fleetd auth' (--creds, FLEET_NATS_CREDS) or the fabric's token (--nats-token, or --token)"
}

// rolesFileFix is the fix for a roles file that does not load.
func rolesFileFix(file string) string {
	return "fix " + file + " (docs/roles.md has every field), then run 'fleetd doctor --roles " + file + "' again"
}

// protocolFix is the fix for a herdr that speaks another protocol.
func protocolFix() string {
	return fmt.Sprintf("run a herdr that speaks protocol %d (herdr 0.8.x)", herdrapi.Protocol)
}

// HerdrFix is the doctor's fix for a herdr that is not there, without
// its advice for the doctor's own flags: what a command that drives
// panes should do.
func HerdrFix() string {
	fix, _, _ := strings.Cut(herdrFix, "; a host without panes")
	return fix
}

// ProvisionFix is the doctor's fix for a fabric whose FLEET stream is
// not there.
func ProvisionFix() string { return provisionFix }

// BoundaryFix is the doctor's fix for a pane that would cross the
// subscription boundary through the environment herdr gives it.
func BoundaryFix() string { return boundaryFix }

// natsAs names the identity a client presents, as the doctor's nats
// line does.
func natsAs(creds, token string) string {
	switch {
	case creds != "":
		return "credentials " + creds
	case token != "":
		return "a token"
	}
	return "no credentials"
}

// Explain says what err, a command's failure, is when it is a fault the
// doctor knows: the roles file, herdr, NATS and FLEET, the lead shim.
// ok is false for any other error.
func Explain(err error, in Inputs) (e Explanation, ok bool) {
	if err == nil {
		return Explanation{}, false
	}
	natsURL := in.NATSURL
	if natsURL == "" {
		natsURL = nats.DefaultURL
	}
	// The roles file first: a file that does not load is the fault
	// whatever the error around it says.
	if lerr := rolesFault(err, in.RolesFile); lerr != nil {
		cause := strings.TrimPrefix(OneLine(lerr), "roles file: ")
		return Explanation{What: "roles file " + in.RolesFile + " does not load", Cause: cause, Fix: rolesFileFix(in.RolesFile)}, true
	}
	var ce *leadshim.ClientError
	switch {
	case errors.Is(err, herdrapi.ErrProtocolMismatch):
		return Explanation{What: "herdr speaks another protocol", Cause: OneLine(err), Fix: protocolFix()}, true
	case errors.Is(err, herdrapi.ErrNotRunning):
		return ExplainHerdr(in.Herdr, err), true
	case errors.Is(err, nats.ErrAuthorization) || (errors.Is(err, natsauth.ErrNoServer) && strings.Contains(strings.ToLower(err.Error()), "authorization")):
		return Explanation{What: "NATS at " + natsURL + " refused the connection", Cause: cause(err), Fix: natsAuthFix(natsAs(in.Creds, in.NATSToken))}, true
	case errors.Is(err, natsauth.ErrNoServer) || errors.Is(err, nats.ErrNoServers):
		return Explanation{What: "NATS at " + natsURL + " does not answer", Cause: strings.TrimPrefix(cause(err), "nats: "), Fix: natsDownFix}, true
	case errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, events.ErrStreamLost):
		return Explanation{What: events.Stream + " is not provisioned on " + natsURL, Fix: provisionFix}, true
	case errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
		return Explanation{What: "JetStream is not enabled for this account on " + natsURL, Cause: OneLine(err), Fix: jetStreamFix}, true
	case errors.Is(err, leadshim.ErrUnreachable) && untrusted(err):
		return Explanation{What: "the lead shim at " + in.ShimURL + " has a certificate this client does not trust", Cause: cause(err),
			Fix: "pass its CA (or its own certificate) with --tls-ca (FLEET_TLS_CA)"}, true
	case errors.Is(err, leadshim.ErrUnreachable):
		return Explanation{What: "the lead shim at " + in.ShimURL + " does not answer", Cause: cause(err), Fix: shimDownFix}, true
	case errors.As(err, &ce):
		return explainShim(ce, in.ShimURL), true
	}
	return Explanation{}, false
}

// ExplainHerdr says that no herdr answers at socket ("": where herdr
// puts it), as the doctor's herdr line does; err is what dialling it
// said (nil: not dialled).
func ExplainHerdr(socket string, err error) Explanation {
	if socket == "" {
		socket, _ = herdrapi.SocketPath(os.Getenv)
	}
	if _, serr := os.Stat(socket); errors.Is(serr, fs.ErrNotExist) {
		return Explanation{What: "no herdr socket at " + socket, Fix: HerdrFix()}
	}
	e := Explanation{What: "herdr's socket " + socket + " does not answer", Fix: HerdrFix()}
	if err != nil {
		e.Cause = cause(err)
	}
	return e
}

// untrusted reports whether err is a TLS certificate that did not
// verify: the shim answered, but not as one this client trusts.
func untrusted(err error) bool {
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var host x509.HostnameError
	var verify *tls.CertificateVerificationError
	return errors.As(err, &unknown) || errors.As(err, &invalid) || errors.As(err, &host) || errors.As(err, &verify)
}

// rolesFault is the roles file's own error when err is it: the file
// does not load now, and err says what loading it said.
func rolesFault(err error, file string) error {
	if file == "" {
		return nil
	}
	_, lerr := roles.Load(file)
	if lerr == nil || !strings.Contains(err.Error(), lerr.Error()) {
		return nil
	}
	return lerr
}

// shimCodeFixes say what to do about a refusal of the shim that its
// message alone does not (a bad request's message is its own fix).
var shimCodeFixes = map[string]string{
	"unknown_agent":     "'fleetd roster' lists the fleet's agents: send to one of them, or to role:<role>",
	"unknown_role":      "the roles are those of the roles file 'fleetd up' was given (--roles, FLEET_ROLES); 'fleetd roster' shows the agents' roles",
	"unknown_turn":      "check the turn id ('fleetd tail' shows the turns in the log)",
	"unknown_job":       "check the job id ('fleetd tail' shows the jobs in the log)",
	"too_many_failures": "wait a minute, then " + shimTokenFix,
	"budget_exhausted":  "wait until the budget frees up (the message says when), or raise the limit in the roles file; 'fleetd cost' shows the spend",
	"role_cap":          "wait for an agent of the role to finish, or queue the turn",
	"no_herdr":          "that host's 'fleetd up' runs with --no-herdr: spawn on a host with herdr",
	"host_unheard":      "the agent's host never came up: start 'fleetd up' there",
}

// explainShim says what a non-2xx answer of the shim means: a 401 is
// the doctor's token fix, a 503 code /healthz also reports the doctor's
// fix for it.
func explainShim(ce *leadshim.ClientError, url string) Explanation {
	e := Explanation{
		What:  fmt.Sprintf("the lead shim at %s answered %d %s", url, ce.Status, ce.Body.Code),
		Cause: OneLine(errors.New(ce.Body.Message)),
		Fix:   shimCodeFixes[ce.Body.Code],
	}
	switch {
	case ce.Status == http.StatusUnauthorized:
		e.What, e.Fix = "the lead shim at "+url+" refuses this token", shimTokenFix
	case ce.Status == http.StatusGatewayTimeout && ce.Body.ID != "":
		e.Fix = "the turn goes on: re-attach with 'fleetd turn " + ce.Body.ID + " --wait 10m'"
	case shimFixes[ce.Body.Code] != "":
		e.Fix = shimFixes[ce.Body.Code]
	case e.Fix == "" && ce.Status >= 500:
		e.Fix = shimLogFix
	}
	return e
}

// cause is err's innermost error on one line: what the system said
// ("connection refused", "no such file or directory"), the rest of the
// chain being what the explanation already names.
func cause(err error) string {
	for {
		var next error
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			next = u.Unwrap()
		case interface{ Unwrap() []error }:
			if es := u.Unwrap(); len(es) > 0 {
				next = es[len(es)-1]
			}
		}
		if next == nil {
			return OneLine(err)
		}
		err = next
	}
}

// OneLine is err's text on one line: errors.Join's newlines (a roles
// file's every problem) become "; ".
func OneLine(err error) string { return oneLine(err) }
