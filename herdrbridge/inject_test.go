package herdrbridge_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/herdrbridge"
	"github.com/fleetd/fleetd/internal/checkfor"
	"github.com/fleetd/fleetd/roles"
)

// killLine is Ctrl-U: typed into a pane, the terminal's line discipline
// (or the shell's line editor) erases the line so far, the opening quote
// of a quoted word with it, and what follows is a command of its own.
const killLine = "\x15"

// A word with a control character never reaches a pane: a spawn whose
// model or resumed session id holds Ctrl-U is refused before herdr is
// touched, and nothing it carried runs on the host.
func TestASpawnRefusesControlCharactersInItsWords(t *testing.T) {
	f := newFleet(t)
	state := t.TempDir()
	b := f.newBridge(func(c *herdrbridge.BridgeConfig) { c.Launch = herdrbridge.Launch{StateDir: state} })
	marker := filepath.Join(t.TempDir(), "marker")
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		req  herdrbridge.SpawnRequest
		want error
	}{
		{"model", herdrbridge.SpawnRequest{Role: "w-rs", Name: "w-1", Model: "m1" + killLine + "touch " + marker + " #"}, roles.ErrControlChar},
		{"model with a newline", herdrbridge.SpawnRequest{Role: "w-rs", Name: "w-1", Model: "m1\ntouch " + marker}, roles.ErrControlChar},
		{"resume", herdrbridge.SpawnRequest{Role: "w-rs", Name: "w-1", Resume: "x" + killLine + "touch " + marker + " #"}, events.ErrSessionID},
		{"cwd", herdrbridge.SpawnRequest{Role: "w-rs", Name: "w-1", Cwd: "/"}, roles.ErrCwd},
	} {
		if _, err := b.Spawn(ctx, tc.req); !errors.Is(err, tc.want) {
			t.Errorf("%s: Spawn = %v, want %v", tc.name, err, tc.want)
		}
	}
	if snap, err := f.client.Snapshot(ctx); err != nil || len(snap.Panes) != 0 {
		t.Fatalf("refused spawns left panes: %v %v", snap.Panes, err)
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the marker exists (%v): a refused word ran on the host", err)
	}
	// What a spawn types is the launcher's path, never the command's
	// words: those are in the launcher, which removed itself as it ran.
	reg, err := b.Spawn(ctx, herdrbridge.SpawnRequest{Role: "w-rs", Name: "w-2", Resume: sid1})
	if err != nil {
		t.Fatal(err)
	}
	f.waitOutput(reg.Pane, "ARGS --resume "+sid1+" END")
	for _, in := range f.herdr.Input(reg.Pane) {
		if bytes.Contains(in.Data, []byte(sid1)) || !bytes.Contains(in.Data, []byte(filepath.Join(state, herdrbridge.LaunchDir))) {
			t.Errorf("typed %q, want only the launcher's path", in.Data)
		}
	}
	if left, _ := os.ReadDir(filepath.Join(state, herdrbridge.LaunchDir)); len(left) != 0 {
		t.Errorf("launchers left behind: %v", left)
	}
}

// An agent writes its own session events (its hooks run inside its
// sandbox, with its NATS key): one that reports a session id that is not
// Claude Code's — Ctrl-U and a command — and dies is restarted afresh,
// and the id is never typed.
func TestARestartNeverTypesAHostileSessionID(t *testing.T) {
	f := newFleet(t)
	b := f.start(func(c *herdrbridge.BridgeConfig) { c.Roles = restartRoles(t) })
	reg, err := b.Spawn(context.Background(), herdrbridge.SpawnRequest{Role: "w-brief", Name: "w-1"})
	if err != nil {
		t.Fatal(err)
	}
	f.waitOutput(reg.Pane, "ARGS  END")
	marker := filepath.Join(t.TempDir(), "marker")
	hostile := "x" + killLine + "touch " + marker + " #"
	f.add("w-1", events.AgentSession{SessionID: hostile, State: "started", Source: "startup"}, "")
	var restarted events.AgentRestart
	checkfor.Eventually(t, 20*time.Second, 50*time.Millisecond, func() error {
		for _, r := range f.restarts("w-1") {
			if r.State == events.RestartRestarted {
				restarted = r
				return nil
			}
		}
		return fmt.Errorf("not restarted: %+v", f.restarts("w-1"))
	})
	if restarted.Resume != "" {
		t.Errorf("restarted resuming %q, want a fresh start", restarted.Resume)
	}
	// The new pane ran the role's command, without --resume.
	f.waitOutput(restarted.Pane, "ARGS  END")
	for _, in := range f.herdr.Input(restarted.Pane) {
		if bytes.Contains(in.Data, []byte(killLine)) || bytes.Contains(in.Data, []byte(marker)) {
			t.Errorf("the restart typed %q", in.Data)
		}
	}
	if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the marker exists (%v): the session id ran on the host", err)
	}
}
