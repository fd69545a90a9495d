package simagent

import (
	"crypto/rand"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf16"
)

// The composer reproduces Claude Code 2.1.328's prompt input as measured in
// a real terminal, traps included: the things a client can get wrong
// (typing without bracketed paste, a leading "!" or "?", a long paste)
// must go wrong here the way they do in Claude, so fleetd's tests against
// the simulator catch them.

// overlay is what covers the prompt box, if anything.
type overlay int

const (
	overlayNone       overlay = iota
	overlayShortcuts          // "?" typed into an empty composer
	overlayHelp               // the /help command
	overlayPermission         // a tool asks for permission ([block])
	overlayAddDir             // a bare "/" submitted: the command menu's first entry, /add-dir
	overlayRewind             // Esc twice on an empty prompt: the message selector
)

// eventKind is what the composer asks the agent to do.
type eventKind int

const (
	evSubmit    eventKind = iota // run a prompt or a slash command
	evBash                       // run a shell command (bash mode)
	evInterrupt                  // Ctrl-C with nothing to clear
	evConfirm                    // a permission dialog answered Yes
	evDeny                       // a permission dialog answered No (or Esc)
)

// inputEvent is one thing the composer hands to the agent.
type inputEvent struct {
	kind  eventKind
	value string // what Claude acts on: trimmed, placeholders expanded
	shown string // the composer's text as it was shown, for the history
}

func (e inputEvent) String() string {
	switch e.kind {
	case evSubmit:
		return fmt.Sprintf("submit %q", e.value)
	case evBash:
		return fmt.Sprintf("bash %q", e.value)
	case evInterrupt:
		return "interrupt"
	case evConfirm:
		return "confirm"
	case evDeny:
		return "deny"
	}
	return "?"
}

// Paste limits: a paste longer than pasteMaxUnits UTF-16 code units (the
// length JavaScript sees) or with more than pasteMaxNewlines newlines
// becomes a placeholder instead of text.
const (
	pasteMaxUnits    = 800
	pasteMaxNewlines = 2
)

// pasted is a paste held behind a placeholder until submit.
type pasted struct {
	ref  string // "[Pasted text #N +K lines]"
	text string
	id   string // the 4 hex digits of its <pasted_content> tags
}

// composer is the prompt box's state and its key handling. It does no I/O:
// the agent feeds it input and draws rows.
type composer struct {
	dec     decoder
	text    []rune
	cursor  int // index into text
	bash    bool
	overlay overlay
	// escArmed: the last key was an Esc that did nothing yet; a second
	// one clears the text, or on an empty prompt opens the rewind
	// selector (Claude Code's "esc esc to clear input").
	escArmed bool
	pastes   []pasted
	nPastes  int // placeholders made this session, for their numbers
	// newID makes a <pasted_content> id; default 4 random hex digits.
	newID func() string
	// slowPaste: a bracketed paste is not taken in at once (Config.PasteLag).
	// Until land, it and every key after it are held, unseen; an Enter
	// meanwhile joins the paste as a newline instead of submitting — the
	// trap an Enter sent before the paste landed falls into.
	slowPaste bool
	held      []key
}

// feed handles one read of terminal input.
func (c *composer) feed(b []byte) []inputEvent {
	return c.keys(c.dec.feed(b))
}

// flush handles the input having gone quiet (a lone ESC was the Esc key).
func (c *composer) flush() []inputEvent {
	return c.keys(c.dec.flush())
}

// String is the composer's text.
func (c *composer) String() string { return string(c.text) }

func (c *composer) keys(keys []key) []inputEvent {
	var evs []inputEvent
	for _, k := range keys {
		if c.slowPaste && (k.kind == keyPaste || len(c.held) > 0) {
			c.hold(k)
			continue
		}
		evs = c.key(k, evs)
	}
	return evs
}

// hold keeps a key behind a paste that has not landed: Enter (CR or LF)
// becomes a newline at the end of the last held paste, as Claude Code's
// paste handling takes an Enter that arrives while it takes a paste in;
// any other key waits its turn.
func (c *composer) hold(k key) {
	if k.kind == keyEnter || k.kind == keyLF {
		for i := len(c.held) - 1; i >= 0; i-- {
			if c.held[i].kind == keyPaste {
				c.held[i].text += "\n"
				return
			}
		}
	}
	c.held = append(c.held, k)
}

// landing reports whether a paste waits to land.
func (c *composer) landing() bool { return len(c.held) > 0 }

// land takes in the held paste and the keys after it, in order.
func (c *composer) land() []inputEvent {
	held := c.held
	c.held = nil
	var evs []inputEvent
	for _, k := range held {
		evs = c.key(k, evs)
	}
	return evs
}

func (c *composer) key(k key, evs []inputEvent) []inputEvent {
	switch c.overlay {
	case overlayPermission:
		// The dialog takes the keys, as Claude Code's does: Enter picks
		// the selected option (the first, "Yes"), a digit picks its
		// option at once — "1" and "2" say yes, "3" no — and Esc
		// cancels, which is a No.
		switch {
		case k.kind == keyEnter || k.kind == keyLF || k.kind == keyRune && (k.r == '1' || k.r == '2'):
			c.overlay = overlayNone
			evs = append(evs, inputEvent{kind: evConfirm})
		case k.kind == keyEsc || k.kind == keyRune && k.r == '3':
			c.overlay = overlayNone
			evs = append(evs, inputEvent{kind: evDeny})
		}
		return evs
	case overlayShortcuts, overlayHelp, overlayAddDir, overlayRewind:
		if k.kind == keyEsc {
			c.overlay = overlayNone
		}
		return evs
	}
	armed := c.escArmed
	c.escArmed = false
	switch k.kind {
	case keyEsc:
		switch {
		case len(c.text) == 0 && c.bash:
			c.bash = false
		case !armed:
			c.escArmed = true
		case len(c.text) > 0:
			c.text, c.cursor, c.pastes = nil, 0, nil
		default:
			c.overlay = overlayRewind
		}
	case keyRune:
		switch {
		case len(c.text) == 0 && k.r == '!' && !c.bash:
			c.bash = true
		case len(c.text) == 0 && k.r == '?':
			c.overlay = overlayShortcuts
		default:
			c.insert([]rune{k.r})
		}
	case keyPaste:
		c.paste(k.text)
	case keyEnter:
		if c.cursor > 0 && c.text[c.cursor-1] == '\\' {
			c.text[c.cursor-1] = '\n'
			break
		}
		evs = c.submit(evs)
	case keyLF:
		evs = c.submit(evs)
	case keyBackspace:
		switch {
		case c.cursor > 0:
			c.text = append(c.text[:c.cursor-1], c.text[c.cursor:]...)
			c.cursor--
		case len(c.text) == 0 && c.bash:
			c.bash = false
		}
	case keyDelete:
		if c.cursor < len(c.text) {
			c.text = append(c.text[:c.cursor], c.text[c.cursor+1:]...)
		}
	case keyLeft:
		c.cursor = max(0, c.cursor-1)
	case keyRight:
		c.cursor = min(len(c.text), c.cursor+1)
	case keyHome, keyCtrlA:
		c.cursor = c.lineStart()
	case keyEnd, keyCtrlE:
		c.cursor = c.lineEnd()
	case keyCtrlU:
		start := c.lineStart()
		c.text = append(c.text[:start], c.text[c.cursor:]...)
		c.cursor = start
	case keyCtrlC:
		if len(c.text) == 0 {
			evs = append(evs, inputEvent{kind: evInterrupt})
			break
		}
		c.text, c.cursor, c.pastes = nil, 0, nil
	}
	return evs
}

func (c *composer) insert(rs []rune) {
	c.text = append(c.text[:c.cursor], append(rs, c.text[c.cursor:]...)...)
	c.cursor += len(rs)
}

// lineStart is the index where the cursor's line starts.
func (c *composer) lineStart() int {
	i := c.cursor
	for i > 0 && c.text[i-1] != '\n' {
		i--
	}
	return i
}

// lineEnd is the index where the cursor's line ends.
func (c *composer) lineEnd() int {
	i := c.cursor
	for i < len(c.text) && c.text[i] != '\n' {
		i++
	}
	return i
}

// paste inserts a bracketed paste as Claude does: normalised, switching to
// bash mode on a leading "!" into an empty prompt, and held behind a
// placeholder when it is long.
func (c *composer) paste(raw string) {
	text := normalisePaste(raw)
	if len(c.text) == 0 && !c.bash && strings.HasPrefix(text, "!") {
		c.bash = true
		text = text[1:]
	}
	if text == "" {
		return
	}
	newlines := strings.Count(text, "\n")
	if len(utf16.Encode([]rune(text))) <= pasteMaxUnits && newlines <= pasteMaxNewlines {
		c.insert([]rune(text))
		return
	}
	c.nPastes++
	newID := c.newID
	if newID == nil {
		newID = randomPasteID
	}
	p := pasted{ref: fmt.Sprintf("[Pasted text #%d +%d lines]", c.nPastes, newlines), text: text, id: newID()}
	c.pastes = append(c.pastes, p)
	c.insert([]rune(p.ref))
}

// normalisePaste applies Claude's paste clean-up: line ends and the Unicode
// line and paragraph separators become "\n", a tab becomes four spaces, and
// invisible format characters (zero-width spaces and joiners, direction
// marks, BOM, soft hyphen) are dropped.
func normalisePaste(s string) string {
	s = strings.NewReplacer("\r\n", "\n", "\r", "\n", "\u2028", "\n", "\u2029", "\n", "\t", "    ").Replace(s)
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)
}

func randomPasteID() string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%02x%02x", b[0], b[1])
}

// submit hands the composer's value over: trailing white space trimmed as
// JavaScript's trimEnd does, placeholders expanded. An empty value does
// nothing.
func (c *composer) submit(evs []inputEvent) []inputEvent {
	value := strings.TrimRightFunc(string(c.text), isJSSpace)
	if value == "" {
		return evs
	}
	for _, p := range c.pastes {
		value = strings.ReplaceAll(value, p.ref,
			"\n\n<pasted_content id=\""+p.id+"\">\n"+p.text+"\n</pasted_content id=\""+p.id+"\">\n")
	}
	kind := evSubmit
	if c.bash {
		kind = evBash
	}
	shown := strings.TrimRightFunc(string(c.text), isJSSpace)
	c.text, c.cursor, c.pastes, c.bash = nil, 0, nil, false
	return append(evs, inputEvent{kind: kind, value: value, shown: shown})
}

// isJSSpace is JavaScript's white space and line terminators, what
// String.prototype.trimEnd removes.
func isJSSpace(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', '\u2028', '\u2029', '\ufeff':
		return true
	}
	return unicode.Is(unicode.Zs, r)
}

// slashRE is how Claude tells a slash command from a prompt that merely
// starts with a path: after leading white space, "/" and a name of
// letters, digits, ":", "_" or "-" (possibly none), then white space or
// the end.
// Compiled on first use, not as every fleetd process (each hook run) starts.
var slashRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^/([A-Za-z0-9:_-]*)`) })

// slashCommand is the command a submitted value names, if it names one,
// as Claude Code 2.1.328 reads it: leading white space is trimmed first
// ("  /help x" opens the help); a bare "/" runs the first entry of the
// command menu that opened as it was typed, /add-dir; "/ x" names no
// command (the name is "", which answers with the commands' form); but
// white space then a bare "/" is a prompt, no menu having opened.
func slashCommand(value string) (string, bool) {
	trimmed := strings.TrimLeftFunc(value, isJSSpace)
	m := slashRE().FindStringSubmatch(trimmed)
	if m == nil {
		return "", false
	}
	rest := []rune(trimmed[len(m[0]):])
	switch {
	case len(rest) > 0 && !isJSSpace(rest[0]):
		return "", false
	case m[1] == "" && len(rest) == 0 && trimmed != value:
		return "", false
	case m[1] == "" && len(rest) == 0:
		return "add-dir", true
	}
	return m[1], true
}
