package herdrbridge

import (
	"os"
	"path/filepath"
	"testing"
)

// A fresh_context turn types OpenCode's /new and waits for its start
// screen: the logo above an empty box. Only the start screen reads as
// cleared — not a session's idle screen, a draft, a popup or a dialog,
// which a /new not yet run leaves.
func TestOpenCodeClearedIsItsStartScreen(t *testing.T) {
	k := OpenCode{}
	var _ LazyClearer = k
	if got := k.ClearCommand(); got != "/new" {
		t.Errorf("ClearCommand %q, want /new", got)
	}
	for file, want := range map[string]bool{
		"empty-start":   true,
		"resumed-ready": false, "idle-after-reply": false, "cleared": false, "working": false,
		"draft": false, "slash-popup": false, "shell-mode": false, "agent-dialog": false,
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "opencode", file+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		if got := k.Cleared(string(b)); got != want {
			t.Errorf("%s: Cleared %v, want %v", file, got, want)
		}
	}
}
