package gateway_test

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/gateway"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/natsauth"
)

// Open writes the hooks settings a spawned pane launches with when there
// are none yet — before it connects, so also when no NATS answers — and
// leaves a file that is there alone.
func TestClientBridgeWritesMissingHookSettingsBeforeItConnects(t *testing.T) {
	dir := t.TempDir()
	noNATS := "nats://127.0.0.1:1"
	cb := gateway.ClientBridge{Socket: filepath.Join(dir, "herdr.sock"), DataDir: dir, NATSURL: noNATS}
	if err := cb.Open(fleettest.Ctx(t)); !errors.Is(err, natsauth.ErrNoServer) {
		t.Fatalf("Open without NATS: %v, want ErrNoServer", err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "claude-settings.json"))
	if err != nil || !strings.Contains(string(b), " hook ") {
		t.Fatalf("settings %q (%v), want fleetd's hooks", b, err)
	}

	own := filepath.Join(dir, "own.json")
	if err := os.WriteFile(own, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	cb = gateway.ClientBridge{Socket: cb.Socket, DataDir: dir, Settings: own, NATSURL: noNATS}
	if err := cb.Open(fleettest.Ctx(t)); !errors.Is(err, natsauth.ErrNoServer) {
		t.Fatalf("Open without NATS: %v, want ErrNoServer", err)
	}
	if b, _ := os.ReadFile(own); string(b) != "{}" {
		t.Errorf("an existing settings file was rewritten: %q", b)
	}
}

// ProvisionAs creates the fabric at one replica on a lone server and says
// what it made.
func TestProvisionAsSaysWhatItProvisioned(t *testing.T) {
	srv := natstest.Start(t)
	var out strings.Builder
	p := gateway.Provisioner{Log: slog.New(slog.DiscardHandler), Roles: []string{"w"}}
	if err := gateway.ProvisionAs(fleettest.Ctx(t), srv.NC, gateway.NewDenials(p.Log), p, &out); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.JS.Stream(fleettest.Ctx(t), events.Stream); err != nil {
		t.Errorf("no FLEET after provisioning: %v", err)
	}
	for _, want := range []string{"(R1): stream FLEET;", gateway.RouterConsumers([]string{"w"})[0]} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output %q lacks %q", out.String(), want)
		}
	}
}

func TestHostTokenIsTheNamedHostElseThisMachine(t *testing.T) {
	if got := gateway.HostToken("Build.Box"); got != events.HostToken("Build.Box") {
		t.Errorf("HostToken(Build.Box) = %q", got)
	}
	if got := gateway.HostToken(""); got == "" || events.ValidToken(got) != nil {
		t.Errorf("HostToken(\"\") = %q, want this machine's token", got)
	}
}
