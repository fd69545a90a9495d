package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/fleetd/fleetd/embeddednats"
	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/natsauth"
	"github.com/fleetd/fleetd/roles"
)

// A command that meets a fault the doctor checks for says the doctor's
// fix for it: for each, the error a command gets is explained with the
// fix the doctor's check gives (herdr's without the advice about the
// doctor's own --no-herdr), and names what failed.
func TestExplainSaysTheDoctorsFix(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := Config{Timeout: 2 * time.Second}

	// A roles file that does not parse.
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte(`{"roles":{"w":{"env_class":"gatway"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, loadErr := roles.Load(bad)
	c := cfg
	c.RolesFile = bad
	same(t, "roles file", checkRoles(ctx, c)[0], fmt.Errorf("open bridge: %w", loadErr), Inputs{RolesFile: bad}, bad, "gatway")

	// No herdr at the socket.
	sock := filepath.Join(dir, "no-herdr.sock")
	_, herdrErr := herdrapi.New(sock).Check(ctx)
	c = cfg
	c.Herdr = sock
	t.Setenv("PATH", t.TempDir()) // no agentapi either: herdr's absence is the fault
	r := checkHerdr(ctx, c)[0]
	e, ok := Explain(fmt.Errorf("spawn: %w", herdrErr), Inputs{Herdr: sock})
	if !ok || !strings.HasPrefix(r.Fix, e.Fix) || !strings.Contains(e.Fix, "start herdr") || strings.Contains(e.Fix, "check it with --no-herdr") ||
		e.What != "no herdr socket at "+sock || e.Cause != "" {
		t.Errorf("herdr missing: %+v; the doctor's fix: %s", e, r.Fix)
	}

	// NATS down.
	down := "nats://127.0.0.1:1"
	_, _, natsErr := natsauth.Connect(down, "test", "", "")
	c = cfg
	c.NATSURL = down
	same(t, "nats down", checkNATS(ctx, c)[0], natsErr, Inputs{NATSURL: down}, down, "no servers available")

	// NATS up without FLEET.
	srv := natstest.Start(t, natstest.WithTCP())
	_, streamErr := srv.JS.Stream(ctx, events.Stream)
	c = cfg
	c.NATSURL = srv.ClientURL()
	same(t, "no FLEET", checkNATS(ctx, c)[1], streamErr, Inputs{NATSURL: srv.ClientURL()}, "FLEET is not provisioned", "")

	// NATS refusing the token.
	authed := natstest.Start(t, natstest.WithTCP(), natstest.WithConfig(func(c *embeddednats.Config) { c.Token = "right" }), natstest.WithClientOptions(nats.Token("right")))
	_, _, authErr := natsauth.Connect(authed.ClientURL(), "test", "", "wrong")
	c = cfg
	c.NATSURL, c.NATSToken = authed.ClientURL(), "wrong"
	same(t, "NATS refuses", checkNATS(ctx, c)[0], authErr, Inputs{NATSURL: authed.ClientURL(), NATSToken: "wrong"}, "refused", "")

	// The shim not there, then refusing the token.
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	_, shimErr := leadshim.NewClient(gone.URL, "").Roster(ctx)
	c = cfg
	c.ShimURL = gone.URL
	same(t, "shim down", checkShim(ctx, c)[0], shimErr, Inputs{ShimURL: gone.URL}, gone.URL, "connection refused")

	shim := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			_ = json.NewEncoder(w).Encode(leadshim.Health{Status: "ok"})
			return
		}
		w.WriteHeader(http.StatusUnauthorized)
		_ = json.NewEncoder(w).Encode(leadshim.Error{Err: leadshim.ErrorBody{Code: "unauthorized", Message: "missing or wrong bearer token"}})
	}))
	t.Cleanup(shim.Close)
	_, tokenErr := leadshim.NewClient(shim.URL, "wrong").Roster(ctx)
	c = cfg
	c.ShimURL, c.ShimToken = shim.URL, "wrong"
	same(t, "shim token", checkShim(ctx, c)[0], tokenErr, Inputs{ShimURL: shim.URL}, "refuses this token", "")

	// A pane crossing the boundary through herdr's environment.
	rc, err := roles.Parse([]byte(`{"roles":{"w":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := checkBoundary(rc, []string{"ANTHROPIC_API_KEY=x"}); r.Fix != BoundaryFix() {
		t.Errorf("boundary: the doctor says %q, BoundaryFix %q", r.Fix, BoundaryFix())
	}

	// An error of no fault the doctor knows is not explained.
	if e, ok := Explain(fmt.Errorf("something else"), Inputs{RolesFile: bad}); ok {
		t.Errorf("an unknown error explained: %+v", e)
	}
}

// same checks that err, explained, has the fix the doctor's failing
// line r has, and that its what and cause say what and cause.
func same(t *testing.T, name string, r Result, err error, in Inputs, what, cause string) {
	t.Helper()
	if r.Status != Fail {
		t.Fatalf("%s: the doctor's line does not fail: %+v", name, r)
	}
	e, ok := Explain(err, in)
	switch {
	case !ok:
		t.Errorf("%s: %v not explained", name, err)
	case e.Fix != r.Fix:
		t.Errorf("%s: fix %q, the doctor's %q", name, e.Fix, r.Fix)
	case !strings.Contains(e.What, what) || !strings.Contains(e.Cause, cause):
		t.Errorf("%s: %+v does not say %q and %q", name, e, what, cause)
	}
}

// A shim whose certificate this client does not trust answered: the
// line says so and how to trust it, not that the fabric is down.
func TestExplainUntrustedShim(t *testing.T) {
	shim := httptest.NewUnstartedServer(http.NotFoundHandler())
	shim.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	shim.StartTLS()
	t.Cleanup(shim.Close)
	_, err := leadshim.NewClient(shim.URL, "").Roster(context.Background())
	e, ok := Explain(err, Inputs{ShimURL: shim.URL})
	if !ok || !strings.Contains(e.What, "certificate this client does not trust") || !strings.Contains(e.Fix, "--tls-ca") {
		t.Errorf("%v explained as %+v", err, e)
	}
}
