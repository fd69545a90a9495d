package doctor

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/roles"
)

// Every kind a role may name has its CLI's tested release, and it is the
// one .ci/install-<kind>.sh installs for the end-to-end tests: the doctor
// judges a CLI against what was actually tested.
func TestTestedCoversEveryKindAtTheCIPin(t *testing.T) {
	pin := regexp.MustCompile(`(?m)^version="\$\{[A-Z_]+:-([^}]+)\}"`)
	for _, kind := range roles.Kinds {
		tc, ok := TestedFor(kind)
		if !ok {
			t.Errorf("kind %s has no entry in Tested", kind)
			continue
		}
		if tc.Version == "" || tc.Bin == "" || tc.Package == "" || tc.Name == "" {
			t.Errorf("kind %s: incomplete %+v", kind, tc)
		}
		script := filepath.Join("..", ".ci", "install-"+kind+".sh")
		b, err := os.ReadFile(script)
		if err != nil {
			t.Errorf("kind %s: %v", kind, err)
			continue
		}
		m := pin.FindSubmatch(b)
		if m == nil {
			t.Errorf("%s: no version=\"${…:-X}\" pin", script)
			continue
		}
		if string(m[1]) != tc.Version {
			t.Errorf("kind %s: Tested says %s, %s installs %s", kind, tc.Version, script, m[1])
		}
		if !strings.Contains(string(b), tc.Package+"@") {
			t.Errorf("kind %s: %s does not install %s", kind, script, tc.Package)
		}
		// The kind's default command starts with the CLI doctor asks.
		r, err := roles.Config{Roles: map[string]roles.Role{"r": {Kind: kind}}}.Get("r")
		if err != nil || len(r.Command) == 0 || r.Command[0] != tc.Bin {
			t.Errorf("kind %s: default command %v, Tested's Bin %s (err %v)", kind, r.Command, tc.Bin, err)
		}
	}
}

// What each tested CLI prints for --version, as measured.
func TestParseVersion(t *testing.T) {
	for out, want := range map[string]string{
		"2.1.328 (Claude Code)\n": "2.1.328",
		"codex-cli 0.169.0\n":     "0.169.0",
		"0.61.0\n":                "0.61.0",
		"1.18.33":                 "1.18.33",
		"pi 0.73.1-beta.2\n":      "0.73.1-beta.2",
		"command not found":       "",
	} {
		if got := ParseVersion(out); got != want {
			t.Errorf("ParseVersion(%q) = %q, want %q", out, got, want)
		}
	}
}

// The text output keeps one line per check with the columns aligned, and
// the fix after " — ".
func TestWriteTextAligns(t *testing.T) {
	var b bytes.Buffer
	rs := []Result{
		ok("nats", "nats://127.0.0.1:4222"),
		fail("role w-claude", "claude not found", "install it"),
		skip("clock", "not checked: no NATS", ""),
	}
	if err := WriteText(&b, rs); err != nil {
		t.Fatal(err)
	}
	want := "ok    nats           nats://127.0.0.1:4222\n" +
		"fail  role w-claude  claude not found — install it\n" +
		"skip  clock          not checked: no NATS\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	if !Failed(rs) || Failed(rs[:1]) || Count(rs, Skip) != 1 {
		t.Errorf("Failed/Count wrong for %+v", rs)
	}
}

// A variable of this environment that a role's pane would inherit across
// its boundary is a warning naming the role and the variable; a gateway
// role's own base URL is not, and a sandboxed role is not judged by it.
func TestCheckBoundary(t *testing.T) {
	c, err := roles.Parse([]byte(`{"roles":{
		"w-clean":{},
		"w-gw":{"env_class":"gateway","base_url":"http://gw.internal"},
		"w-box":{"sandbox":"bwrap"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r := checkBoundary(c, []string{"PATH=/bin", "HOME=/h"}); r.Status != OK {
		t.Errorf("clean environment: %+v", r)
	}
	r := checkBoundary(c, []string{"PATH=/bin", "ANTHROPIC_API_KEY=sk-x"})
	if r.Status != Warn || !strings.Contains(r.Detail, `"w-clean"`) || !strings.Contains(r.Detail, "ANTHROPIC_API_KEY") || r.Fix == "" {
		t.Errorf("a key in the environment: %+v", r)
	}
	if strings.Contains(r.Detail, "w-box") {
		t.Errorf("a sandboxed role judged by the environment: %+v", r)
	}
	r = checkBoundary(c, []string{"ANTHROPIC_BASE_URL=http://elsewhere"})
	if r.Status != Warn || !strings.Contains(r.Detail, "w-clean") || slices.Contains(strings.Fields(r.Detail), `"w-gw"`) {
		t.Errorf("a base URL in the environment: %+v (the gateway role launches with its own on top)", r)
	}
}

// A NATS without the FLEET stream fails the stream line with what
// provisions it (and skips the clock); once FLEET is there, with a host's
// heartbeat in it, all three lines are ok and the clock names the host.
func TestCheckNATSProvisioning(t *testing.T) {
	srv := natstest.Start(t, natstest.WithTCP())
	cfg := Config{NATSURL: srv.ClientURL(), Timeout: DefaultTimeout}
	ctx := context.Background()
	rs := checkNATS(ctx, cfg)
	if len(rs) != 3 || rs[0].Status != OK || rs[1].Status != Fail || !strings.Contains(rs[1].Fix, "fleetd provision") || rs[2].Status != Skip {
		t.Fatalf("no FLEET: %+v", rs)
	}
	if _, err := events.EnsureStream(ctx, srv.JS, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	log := events.New(srv.JS, events.Options{Source: "fleetd/test"})
	if _, err := log.Append(ctx, events.Event{Subject: "h1", Data: events.HostUp{Host: "h1", Heartbeat: true}}); err != nil {
		t.Fatal(err)
	}
	rs = checkNATS(ctx, cfg)
	for _, r := range rs {
		if r.Status != OK {
			t.Errorf("%s: %s: %s — %s", r.Check, r.Status, r.Detail, r.Fix)
		}
	}
	if len(rs) != 3 || !strings.Contains(rs[1].Detail, "1 events") || !strings.Contains(rs[2].Detail, "host h1") {
		t.Errorf("with FLEET: %+v", rs)
	}
}
