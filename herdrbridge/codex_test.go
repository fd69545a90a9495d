package herdrbridge

import (
	"os"
	"path/filepath"
	"testing"
)

// The screens are the real Codex 0.169.0's (tmux capture-pane, 120×40).
func TestCodexComposerOnItsRealScreens(t *testing.T) {
	tests := []struct {
		file    string
		want    Composer
		working bool
	}{
		{"empty-start", Composer{Visible: true}, false},
		{"cleared", Composer{Visible: true}, false},
		{"replied", Composer{Visible: true}, false},
		{"working", Composer{Visible: true}, true},
		{"draft", Composer{Visible: true, Text: "a draft\nof two lines"}, false},
		{"shell-mode", Composer{Visible: true, Bash: true}, false},
		{"shell-after-esc", Composer{Visible: true}, false},
		{"slash-popup", Composer{Visible: true, Text: "/"}, false},
		{"slash-after-esc", Composer{Visible: true, Text: "/"}, false},
		{"at-popup", Composer{Visible: true, Text: "@"}, false},
		// /permissions' picker where the composer was (recorded in
		// recording/testdata/codex/0.169.0/dialog): no prompt box, so
		// recovery presses Escape, which closes it.
		{"permissions-picker", Composer{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "codex", tt.file+".txt"))
			if err != nil {
				t.Fatal(err)
			}
			if got := (Codex{}).ParseComposer(string(b)); got != tt.want {
				t.Errorf("ParseComposer = %+v, want %+v", got, tt.want)
			}
			if got := (Codex{}).Working(string(b)); got != tt.working {
				t.Errorf("Working = %v, want %v", got, tt.working)
			}
		})
	}
	// A draft of numbered rows stays a draft: the status row is under it.
	numbered := "› 1. first\n  2. second\n\n  fake-model default · /tmp/cx/work\n"
	if got, want := (Codex{}).ParseComposer(numbered), (Composer{Visible: true, Text: "1. first\n2. second"}); got != want {
		t.Errorf("a numbered draft read as %+v, want %+v", got, want)
	}
	if got := (Codex{}).ParseComposer("$ "); got.Visible {
		t.Errorf("a shell prompt read as Codex's composer: %+v", got)
	}
}

func TestCodexPlanTypesWhatItsComposerKeeps(t *testing.T) {
	tests := []struct {
		text, delivery string
	}{
		{"fix the tests", DeliveryPaste},
		{"two\nlines", DeliveryPaste},
		{"hello @nobody answer", DeliveryPaste},
		{"?", DeliveryPaste},
		{"naïve café — 日本語 ✓", DeliveryPaste},
		{"!touch x", DeliveryFile},
		{"/help", DeliveryFile},
		{"  /help after spaces", DeliveryFile},
		{"@file", DeliveryFile},
		{"a\tb", DeliveryFile},
		{"trailing ", DeliveryFile},
		{string(make([]byte, 2000)), DeliveryFile},
	}
	for _, tt := range tests {
		if got := (Codex{}).PlanText(tt.text, Limits{}); got.Delivery != tt.delivery || got.Delivery == DeliveryFile && got.Why == "" {
			t.Errorf("PlanText(%.20q) = %+v, want %s", tt.text, got, tt.delivery)
		}
	}
}

// The trusted hash is the one Codex writes when told to trust a hook (the
// formula verified with 0.169.0; the value computed by that formula, with
// "&&" as it is, not HTML-escaped).
func TestCodexHookHashIsCodexs(t *testing.T) {
	got, err := codexHookHash("stop", "test -x /a/fleetd-hook && exec /a/fleetd-hook stop || exec /a/fleetd hook stop", 10)
	if want := "sha256:fa09d94bdffdee966006185b7cccc9c0887bce416d5509d9167024a8cbd7cfca"; err != nil || got != want {
		t.Errorf("hash %s, %v; want %s", got, err, want)
	}
}
