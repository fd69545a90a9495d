package herdrbridge

import (
	"os"
	"path/filepath"
	"testing"
)

// A fresh_context turn types Codex's /clear and waits for a new chat's
// screen: the logo above an empty composer. A chat with a turn, a draft
// or a popup does not read as cleared.
func TestCodexClearedIsANewChatsScreen(t *testing.T) {
	k := Codex{}
	var _ LazyClearer = k
	if got := k.ClearCommand(); got != "/clear" {
		t.Errorf("ClearCommand %q, want /clear", got)
	}
	for file, want := range map[string]bool{
		"empty-start": true, "cleared": true,
		"shell-after-esc": true,
		"replied":         false, "working": false, "draft": false, "slash-popup": false, "at-popup": false,
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "codex", file+".txt"))
		if err != nil {
			t.Fatal(err)
		}
		if got := k.Cleared(string(b)); got != want {
			t.Errorf("%s: Cleared %v, want %v", file, got, want)
		}
	}
}
