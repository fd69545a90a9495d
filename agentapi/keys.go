package agentapi

import (
	"context"
	"fmt"
	"strings"
)

// keys are the bytes a terminal sends for the named keys, named as
// herdr's pane.send_keys names them, so one typing plan drives both
// runtimes. agentapi has no key names of its own: a key is raw input.
// The cursor keys are the CSI forms; Claude Code 2.1.328 under agentapi
// (TERM=vt100) takes Home, Delete, End and Left in these forms (measured:
// fleetd's " !" + Home, Delete, End plan and its Left-before-Enter plan
// deliver their texts exactly; docs/agentapi.md).
var keys = map[string]string{
	"enter":     "\r",
	"esc":       "\x1b",
	"escape":    "\x1b",
	"tab":       "\t",
	"backspace": "\x7f",
	"delete":    "\x1b[3~",
	"up":        "\x1b[A",
	"down":      "\x1b[B",
	"right":     "\x1b[C",
	"left":      "\x1b[D",
	"home":      "\x1b[H",
	"end":       "\x1b[F",
	"ctrl+a":    "\x01",
	"ctrl+c":    "\x03",
	"ctrl+d":    "\x04",
	"ctrl+e":    "\x05",
	"ctrl+k":    "\x0b",
	"ctrl+u":    "\x15",
}

// KeyBytes returns the raw input for a named key ("enter", "esc",
// "left", "ctrl+c", …; case-insensitive).
func KeyBytes(name string) (string, error) {
	b, ok := keys[strings.ToLower(name)]
	if !ok {
		return "", fmt.Errorf("agentapi: unknown key %q", name)
	}
	return b, nil
}

// SendKeys sends named keys, each as its own write (as herdr does), so
// an agent never reads two keys, or a key and a paste, as one chunk. An
// unknown name fails before anything is sent.
func (c *Client) SendKeys(ctx context.Context, names ...string) error {
	raw := make([]string, len(names))
	for i, n := range names {
		b, err := KeyBytes(n)
		if err != nil {
			return err
		}
		raw[i] = b
	}
	for i, b := range raw {
		if err := c.SendRaw(ctx, b); err != nil {
			return fmt.Errorf("key %s: %w", names[i], err)
		}
	}
	return nil
}

// Paste sends text as one bracketed paste and no Enter: what herdr's
// pane.send_text does for a program that turned bracketed paste on.
// agentapi does not track whether the agent did (every TUI agent fleetd
// runs does); a program that did not sees the markers as keys.
func (c *Client) Paste(ctx context.Context, text string) error {
	return c.SendRaw(ctx, "\x1b[200~"+text+"\x1b[201~")
}
