package herdrbridge

import (
	"strings"
	"testing"
	"unicode/utf16"
)

func TestPlanTypesWhatTheComposerKeepsAndFilesTheRest(t *testing.T) {
	long := strings.Repeat("x", 1500)
	tests := []struct {
		name, text string
		delivery   string
		pieces     int
		bang, left bool
	}{
		{"plain text is one paste", "fix the tests", DeliveryPaste, 1, false, false},
		{"two newlines fit one paste", "a\nb\nc", DeliveryPaste, 1, false, false},
		{"three newlines need two pastes", "a\nb\nc\nd", DeliveryPieces, 2, false, false},
		{"a long line goes in pieces", long, DeliveryPieces, 3, false, false},
		{"a leading bang is typed apart", "!rm -rf ~", DeliveryPieces, 2, true, false},
		{"a lone bang", "!", DeliveryPieces, 1, true, false},
		{"a trailing backslash needs Left", `C:\`, DeliveryPieces, 1, false, true},
		{"a slash command goes as a file", "/help me", DeliveryFile, 0, false, false},
		{"a bare slash command goes as a file", "/clear", DeliveryFile, 0, false, false},
		{"a path is a prompt", "/tmp/x is broken", DeliveryPaste, 1, false, false},
		{"a slash command after spaces goes as a file", "  /help is a slash after spaces", DeliveryFile, 0, false, false},
		{"a slash command after a newline goes as a file", "\n/help me", DeliveryFile, 0, false, false},
		{"a bare slash goes as a file", "/", DeliveryFile, 0, false, false},
		{"a slash and a space go as a file", "/ hello", DeliveryFile, 0, false, false},
		{"a file name after a slash is a prompt", "/foo.go is broken", DeliveryPaste, 1, false, false},
		// 2.1.328 sends "  /" as a prompt, but "/ x" not: the shape goes as a file.
		{"a bare slash after spaces goes as a file", "  /", DeliveryFile, 0, false, false},
		{"a bang after spaces is a prompt", "  !touch x", DeliveryPaste, 1, false, false},
		{"a bare question mark is a paste", "?", DeliveryPaste, 1, false, false},
		{"a bare hash, at sign and ampersand are pastes", "#", DeliveryPaste, 1, false, false},
		{"tabs go as a file", "a\tb", DeliveryFile, 0, false, false},
		{"trailing whitespace goes as a file", "fix it\n", DeliveryFile, 0, false, false},
		{"a trailing NBSP goes as a file", "fix it\u00a0", DeliveryFile, 0, false, false},
		{"a zero-width space goes as a file", "a\u200bb", DeliveryFile, 0, false, false},
		{"a line separator goes as a file", "a\u2028b", DeliveryFile, 0, false, false},
		{"a combining accent goes as a file", "e\u0301", DeliveryFile, 0, false, false},
		{"a composed accent is a paste", "\u00e9 ✓ 🎉", DeliveryPaste, 1, false, false},
		{"over the byte limit goes as a file", strings.Repeat("y", 40<<10), DeliveryFile, 0, false, false},
		{"too many pieces go as a file", strings.Repeat("a\n", 300) + "z", DeliveryFile, 0, false, false},
		{"question mark and friends are pastes", "? # & @x", DeliveryPaste, 1, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := PlanText(tt.text, Limits{})
			if p.Delivery != tt.delivery || len(p.Pieces) != tt.pieces || p.BangFirst != tt.bang || p.LeftBeforeEnter != tt.left {
				t.Fatalf("plan %+v, want %s with %d pieces, bang %v, left %v", p, tt.delivery, tt.pieces, tt.bang, tt.left)
			}
			if p.Delivery == DeliveryFile {
				if p.Why == "" {
					t.Error("a file delivery says no reason")
				}
				return
			}
			// The pieces are the text (the bang's placeholder space aside),
			// each within the limits that keep a paste a paste.
			joined := strings.Join(p.Pieces, "")
			if p.BangFirst {
				joined = strings.TrimPrefix(joined, " ")
			}
			if joined != tt.text {
				t.Errorf("pieces join to %q, want %q", joined, tt.text)
			}
			for _, piece := range p.Pieces {
				if n := len(utf16.Encode([]rune(piece))); n > DefaultLimits.PieceUnits || strings.Count(piece, "\n") > DefaultLimits.PieceNewlines || piece == "" {
					t.Errorf("piece %q: %d units, %d newlines", piece, n, strings.Count(piece, "\n"))
				}
			}
		})
	}
}

func TestParseComposerFindsTheBoxAtTheBottom(t *testing.T) {
	rule := strings.Repeat("─", 40)
	tests := []struct {
		name, screen string
		want         Composer
	}{
		{"an empty box", "● ECHO: hi\n" + rule + "\n❯\u00a0\n" + rule + "\n  ⏵⏵ auto mode on\n\n", Composer{Visible: true}},
		{"a box holding text", rule + "\n❯ draft\n  second line\n" + rule + "\n  footer", Composer{Visible: true, Text: "draft\nsecond line"}},
		{"bash mode", rule + "\n! ls\n" + rule + "\n  ! for shell mode", Composer{Visible: true, Text: "ls", Bash: true}},
		{"old prompts above do not count", "❯ old prompt\n" + rule + "\n  Shortcuts\n  esc to close\n  a\n  b\n  c", Composer{}},
		{"a dialog instead of the box", "Do you want to proceed?\n❯ 1. Yes\n  2. No\nEsc to cancel", Composer{}},
		{"a shell after the agent exited", "❯ /exit\n" + rule + "\nbash-5.2$ ", Composer{}},
		{"nothing", "", Composer{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ParseComposer(tt.screen); got != tt.want {
				t.Errorf("ParseComposer = %+v, want %+v", got, tt.want)
			}
		})
	}
}
