package herdrbridge_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/herdrbridge"
)

// Screen reads what a live agent's pane shows, and says ErrNotHere for
// an agent that is not live here — unknown, or stopped.
func TestScreenReadsALiveAgentsPane(t *testing.T) {
	f := newFleet(t)
	b := f.start(func(c *herdrbridge.BridgeConfig) { c.Roles = mustRoles(t, controlRoles(t)) })
	ctx := context.Background()
	reg, err := b.Spawn(ctx, herdrbridge.SpawnRequest{Role: "w-never", Name: "w-1"})
	if err != nil {
		t.Fatal(err)
	}
	f.waitOutput(reg.Pane, "ARGS  END")
	sc, err := b.Screen(ctx, "w-1")
	if err != nil {
		t.Fatal(err)
	}
	if sc.Agent != "w-1" || sc.Pane != reg.Pane || !strings.Contains(sc.Text, "ARGS  END") {
		t.Errorf("Screen = %+v, want w-1's pane %s showing its output", sc, reg.Pane)
	}
	if _, err := b.Screen(ctx, "ghost"); !errors.Is(err, herdrbridge.ErrNotHere) {
		t.Errorf("an unknown agent's screen: %v, want ErrNotHere", err)
	}
	if err := b.Stop(ctx, "w-1", "alice"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Screen(ctx, "w-1"); !errors.Is(err, herdrbridge.ErrNotHere) {
		t.Errorf("a stopped agent's screen: %v, want ErrNotHere", err)
	}
}
