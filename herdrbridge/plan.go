package herdrbridge

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// How a turn's text reaches the model (events.AgentTyped.Delivery).
const (
	// DeliveryPaste: one bracketed paste, then Enter.
	DeliveryPaste = "paste"
	// DeliveryPieces: several pastes (and cursor keys) that Claude Code's
	// composer keeps exactly, then Enter.
	DeliveryPieces = "pieces"
	// DeliveryFile: the text is written to a file in the agent's working
	// directory and a short prompt hands it over.
	DeliveryFile = "file"
	// DeliveryCommand: a slash command typed on purpose.
	DeliveryCommand = "command"
)

// Limits bound how a text is typed. The zero value is DefaultLimits.
type Limits struct {
	// PieceUnits and PieceNewlines bound one paste. Claude Code 2.1.328
	// shows a paste of more than 800 UTF-16 code units, or with more than
	// two newlines, as a "[Pasted text #N]" placeholder and sends it to the
	// model wrapped in <pasted_content> tags: smaller pastes arrive as
	// they are. Defaults 640 and 2.
	PieceUnits    int
	PieceNewlines int
	// MaxPieces and MaxPasteBytes bound a typed text; a longer one goes
	// as a file (each piece is a herdr request and a composer redraw).
	// Defaults 128 pieces, 32 KiB.
	MaxPieces     int
	MaxPasteBytes int
}

// DefaultLimits are the limits measured against Claude Code 2.1.328.
var DefaultLimits = Limits{PieceUnits: 640, PieceNewlines: 2, MaxPieces: 128, MaxPasteBytes: 32 << 10}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.PieceUnits > 0 {
		d.PieceUnits = l.PieceUnits
	}
	if l.PieceNewlines > 0 {
		d.PieceNewlines = l.PieceNewlines
	}
	if l.MaxPieces > 0 {
		d.MaxPieces = l.MaxPieces
	}
	if l.MaxPasteBytes > 0 {
		d.MaxPasteBytes = l.MaxPasteBytes
	}
	return d
}

// Plan is how one turn is typed: what is pasted, which keys go between,
// and why. It depends only on the text and the limits, so the same turn
// is always typed the same way.
type Plan struct {
	Delivery string
	// Pieces are the pastes, in order. For DeliveryFile it is the one short
	// prompt that hands the file over (filled in by the bridge, which
	// knows the file's path); for DeliveryCommand the command.
	Pieces []string
	// BangFirst: the text starts with "!", which switches an empty
	// composer into bash mode even inside a paste. The first piece is then
	// " !" and Home, Delete, End follow it: the composer holds "!" in
	// prompt mode (removing a character never switches modes).
	BangFirst bool
	// LeftBeforeEnter: the text ends with "\", and Enter right after a
	// backslash makes a newline instead of submitting; one Left moves the
	// cursor off it.
	LeftBeforeEnter bool
	// Why says, for a file delivery, why the text could not be typed.
	Why string
}

// commandLike matches text Claude Code would take for a slash command on
// submit, however it was typed: leading white space (which it trims for
// this test alone: the model would get it), then "/" and a name of
// letters, digits, ":", "_" or "-" — possibly empty — then white space or
// the end. Measured with 2.1.328: "  /help x" opens the help, a bare "/"
// picks the first entry of the command menu (/add-dir, a dialog), "/ x"
// answers "Commands are in the form /command [args]"; none reaches the
// model. "/tmp/x" and "/foo.go" are prompts: the name would hold "/" or ".".
// Compiled on first use, not as every fleetd process (each hook run) starts.
func commandLike() *regexp.Regexp { return regexps().commandLike }

// startsLikeCommand reports whether Claude Code would run text as a slash
// command instead of sending it.
func startsLikeCommand(text string) bool {
	return commandLike().MatchString(strings.TrimLeftFunc(text, isJSSpace))
}

// isJSSpace is JavaScript's white space and line terminators, what
// String.prototype.trim removes (Claude Code trims a value so before it
// looks for a command).
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', '\u2028', '\u2029', '\ufeff':
		return true
	}
	return unicode.Is(unicode.Zs, r)
}

// PlanText decides how text (already normalised) is typed into Claude
// Code's composer so that the model receives exactly text as the prompt,
// or, when no way of typing can guarantee that, that it goes as a file.
// What the composer does to typed text was measured with the real Claude
// Code 2.1.328 (docs/claude-composer.md).
func PlanText(text string, l Limits) Plan {
	l = l.withDefaults()
	if why := mustGoAsFile(text, l); why != "" {
		return Plan{Delivery: DeliveryFile, Why: why}
	}
	p := Plan{LeftBeforeEnter: strings.HasSuffix(text, `\`)}
	body := text
	if strings.HasPrefix(text, "!") {
		p.BangFirst = true
		body = text[1:]
	}
	p.Pieces = split(body, l.PieceUnits, l.PieceNewlines)
	if p.BangFirst {
		p.Pieces = append([]string{" !"}, p.Pieces...)
	}
	if len(p.Pieces) > l.MaxPieces {
		return Plan{Delivery: DeliveryFile, Why: fmt.Sprintf("it would take %d pastes (more than %d)", len(p.Pieces), l.MaxPieces)}
	}
	p.Delivery = DeliveryPieces
	if len(p.Pieces) == 1 && !p.BangFirst && !p.LeftBeforeEnter {
		p.Delivery = DeliveryPaste
	}
	return p
}

// Shows is what the composer holds once the plan's pastes and keys have
// landed in an empty one: the pieces in order, the " !" of BangFirst
// having become "!".
func (p Plan) Shows() string {
	s := strings.Join(p.Pieces, "")
	if p.BangFirst {
		s = strings.TrimPrefix(s, " ")
	}
	return s
}

// PlanCommand is the plan of a command turn: the command, pasted, then
// Enter.
func PlanCommand(command string) Plan {
	return Plan{Delivery: DeliveryCommand, Pieces: []string{command}}
}

// mustGoAsFile says why the composer would change text (so it must go as
// a file), or "" when it can be typed as it is.
func mustGoAsFile(text string, l Limits) string {
	switch {
	case len(text) > l.MaxPasteBytes:
		return fmt.Sprintf("it is longer than %d bytes", l.MaxPasteBytes)
	case startsLikeCommand(text):
		return "it starts like a slash command (after any white space), which Claude Code would run instead of sending"
	}
	if r, _ := utf8.DecodeLastRuneInString(text); unicode.IsSpace(r) || r == '\ufeff' {
		return "it ends in whitespace, which Claude Code trims"
	}
	if !norm.NFC.IsNormalString(text) {
		return "it is not in Unicode normal form C, which Claude Code applies (a letter and its combining accent become one character)"
	}
	for _, r := range text {
		switch {
		case r == '\t':
			return "it contains tabs, which Claude Code turns into spaces"
		case r == '\u2028' || r == '\u2029':
			return "it contains Unicode line separators, which Claude Code turns into newlines"
		case unicode.Is(unicode.Cf, r):
			return fmt.Sprintf("it contains the invisible character %U, which Claude Code drops", r)
		}
	}
	return ""
}

// split cuts s into pieces of at most units UTF-16 code units (Claude
// Code counts JavaScript string length) and newlines newlines, at rune
// boundaries.
func split(s string, units, newlines int) []string {
	if s == "" {
		return nil
	}
	var out []string
	start, n, nl := 0, 0, 0
	for i, r := range s {
		w := utf16.RuneLen(r)
		if w < 0 {
			w = 1
		}
		if n+w > units || (r == '\n' && nl == newlines) {
			out = append(out, s[start:i])
			start, n, nl = i, 0, 0
		}
		n += w
		if r == '\n' {
			nl++
		}
	}
	return append(out, s[start:])
}
