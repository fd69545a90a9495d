package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/events/eventstest"
	"github.com/fleetd/fleetd/gateway"
	"github.com/fleetd/fleetd/herdrbridge/herdrschema"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/roles"
)

func TestSpawnAndAdoptCommandsRegisterAgents(t *testing.T) {
	ctx := context.Background()
	h := herdrtest.Start(t, herdrtest.Config{Validator: herdrschema.Schema(t)})
	ns := natstest.Start(t, natstest.WithTCP())
	if _, err := events.EnsureStream(ctx, ns.JS, events.StreamOptions{}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rolesFile := filepath.Join(dir, "roles.json")
	err := os.WriteFile(rolesFile, []byte(`{"roles":{"w-sh":{"command":["sh","-c","echo UP $FLEET_AGENT_ID; exec sleep 60"]}}}`), 0o600)
	if err != nil {
		t.Fatal(err)
	}
	g := &Globals{Host: "h1", NATS: ns.ClientURL(), URL: "http://127.0.0.1:8765", LogLevel: "error"}
	flags := herdrFlags{Roles: rolesFile, Herdr: h.Path(), DataDir: dir}

	spawn := &SpawnCmd{Role: "w-sh", Name: "w-1", herdrFlags: flags}
	if err := spawn.Run(ctx, g); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "claude-settings.json")); err != nil {
		t.Errorf("hooks settings not written: %v", err)
	}
	log := events.New(ns.JS, events.Options{})
	regs := eventstest.ReadAll(t, log, events.Query{Subjects: []string{"fleet.agent.*.registered"}})
	if len(regs) != 1 {
		t.Fatalf("%d registrations, want 1", len(regs))
	}
	reg := regs[0].Data.(events.AgentRegistered)
	if reg.Agent != "w-1" || reg.Host != "h1" || reg.Origin != "spawned" {
		t.Errorf("registered %+v", reg)
	}
	checkfor.Eventually(t, 5*time.Second, 20*time.Millisecond, func() error {
		if out := h.Output(reg.Pane); !bytes.Contains(out, []byte("UP w-1")) {
			return fmt.Errorf("pane %s never ran the role's command: %q", reg.Pane, out)
		}
		return nil
	})

	bad := &SpawnCmd{Role: "w-sh", Name: "w-2", Env: map[string]string{"ANTHROPIC_BASE_URL": "http://x"}, herdrFlags: flags}
	if err := bad.Run(ctx, g); !errors.Is(err, roles.ErrBoundary) {
		t.Errorf("boundary-crossing spawn = %v, want ErrBoundary", err)
	}

	// Without --host, spawn works for the host whose gateway drives this
	// herdr; with none running it refuses before opening a pane.
	calls := h.Calls()
	hostless := &Globals{NATS: ns.ClientURL(), URL: g.URL, LogLevel: "error"}
	if err := (&SpawnCmd{Role: "w-sh", Name: "w-4", herdrFlags: flags}).Run(ctx, hostless); !errors.Is(err, gateway.ErrNoOwner) {
		t.Errorf("spawn without --host and no gateway = %v, want ErrNoOwner", err)
	}
	if after := h.Calls(); !maps.Equal(after, calls) {
		t.Errorf("a refused spawn called herdr: %v, before %v", after, calls)
	}

	other, err := h.SpawnPane(ctx, herdrtest.PaneSpec{Argv: []string{"sleep", "60"}})
	if err != nil {
		t.Fatal(err)
	}
	adopt := &AdoptCmd{Pane: other.ID, As: "w-3", Role: "w-sh", herdrFlags: flags}
	if err := adopt.Run(ctx, g); err != nil {
		t.Fatal(err)
	}
	regs = eventstest.ReadAll(t, log, events.Query{Subjects: []string{"fleet.agent.w-3.registered"}})
	if len(regs) != 1 || regs[0].Data.(events.AgentRegistered).Origin != "adopted" {
		t.Errorf("adopt registered %v", regs)
	}
}
