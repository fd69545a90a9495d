package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
)

// fleetd cancel fails a queued turn and says who cancelled it, and an
// error names the API's code; fleetd stop and restart say so when the
// shim's host drives no herdr.
func TestCancelStopAndRestartCommands(t *testing.T) {
	f := fleettest.New(t)
	f.Register("w1", "w-local") // nobody plays it: its turns stay queued
	g := shimFor(t, f)
	ctx := fleettest.Ctx(t)
	acc, err := leadshim.NewClient(g.URL, "").SendAsync(ctx, leadshim.Message{To: "w1", From: "lead", Text: "never typed"})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := (&CancelCmd{Turn: acc.ID, From: "alice", out: &out}).Run(ctx, g); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "turn "+acc.ID+" on w1: cancelled by alice\n"; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
	if err := (&CancelCmd{Turn: acc.ID, From: "alice", out: &out}).Run(ctx, g); err == nil || !strings.Contains(err.Error(), "turn_done") {
		t.Errorf("a second cancel: %v, want turn_done", err)
	}
	// A role turn no agent has taken (no router runs here): cancelled in
	// its role's queue.
	role, err := leadshim.NewClient(g.URL, "").SendAsync(ctx, leadshim.Message{To: "role:w-local", From: "lead", Text: "nobody takes it"})
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if err := (&CancelCmd{Turn: role.ID, From: "bob", out: &out}).Run(ctx, g); err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "turn "+role.ID+" in role w-local's queue: cancelled by bob\n"; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
	if err := (&StopCmd{Agent: "w1", From: "alice", out: &out}).Run(ctx, g); err == nil || !strings.Contains(err.Error(), "no_herdr") {
		t.Errorf("stop without herdr: %v, want no_herdr", err)
	}
	if err := (&RestartCmd{Agent: "w1", From: "alice", out: &out}).Run(ctx, g); err == nil || !strings.Contains(err.Error(), "no_herdr") {
		t.Errorf("restart without herdr: %v, want no_herdr", err)
	}
}
