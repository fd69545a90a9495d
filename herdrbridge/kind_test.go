package herdrbridge_test

import (
	"errors"
	"testing"

	"github.com/fleetd/fleetd/herdrbridge"
)

// An agent registered before kinds existed is Claude Code; a kind this
// fleetd has no room for is refused by name, saying which there are.
func TestKindOfNamesTheRoomOrRefuses(t *testing.T) {
	for _, name := range []string{"", "claude"} {
		k, err := herdrbridge.KindOf(name)
		if err != nil || k.Name() != "claude" {
			t.Errorf("KindOf(%q) = %v, %v; want claude", name, k, err)
		}
	}
	if k, err := herdrbridge.KindOf("codex"); err != nil || k.Name() != "codex" {
		t.Errorf("KindOf(codex) = %v, %v", k, err)
	}
	_, err := herdrbridge.KindOf("nano")
	if !errors.Is(err, herdrbridge.ErrUnknownKind) || !contains(err.Error(), "claude") || !contains(err.Error(), "codex") {
		t.Errorf("KindOf(nano): %v, want ErrUnknownKind naming claude and codex", err)
	}
	// Claude's room is what the engine used before kinds: its composer,
	// plan and hand-over.
	c := herdrbridge.Claude{}
	if p := c.PlanText("/help me", herdrbridge.Limits{}); p.Delivery != herdrbridge.DeliveryFile {
		t.Errorf("Claude plans %q as %s, want a file", "/help me", p.Delivery)
	}
	if got := c.HandOver("/w/.fleet/inbox/X.md", 12, "it has tabs"); !contains(got, "@/w/.fleet/inbox/X.md (12 bytes; it came as a file because it has tabs)") {
		t.Errorf("hand-over prompt %q", got)
	}
}
