package roles

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// ErrControlChar means a word fleetd would type into a pane, or pass to
// an agent's launch, holds a control character.
var ErrControlChar = errors.New("control character")

// CheckWord refuses s, a launch word named by what (a model, a path, an
// env value), when it holds a control character — C0 (tab and newline
// too), DEL or C1 — or is not UTF-8. A launch is typed into the pane's
// terminal, where such a character is a key the line editor acts on, not
// a letter of a quoted word: Ctrl-U (U+0015) erases the line with its
// opening quote and what follows runs on the host, a newline runs the
// line so far; a stray byte may start an escape sequence. No model name,
// path or id fleetd launches with needs one.
func CheckWord(what, s string) error {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			return fmt.Errorf("%w: %s %q is not UTF-8 (a bad byte at %d)", ErrControlChar, what, s, i)
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f:
			return fmt.Errorf("%w U+%04X at byte %d of %s %q: fleetd types launch words into a terminal, where it would act as a key", ErrControlChar, r, i, what, s)
		}
	}
	return nil
}

// CheckWords is CheckWord on each word of argv.
func CheckWords(what string, argv []string) error {
	for i, a := range argv {
		if err := CheckWord(fmt.Sprintf("%s word %d", what, i), a); err != nil {
			return err
		}
	}
	return nil
}

// ErrCwd means a spawn's working directory is not one its role allows.
var ErrCwd = errors.New("working directory not allowed")

// CwdRoots are the directories a spawn's working directory may be in
// (itself or below) when the role names none (Role.CwdRoots): the home
// directory of fleetd's user, fleetd's own working directory (where `fleetd
// up` was started: a user's project) unless that is /, and the system's
// temporary directory (scratch work, and where tests make theirs). fleetd
// writes files under an agent's working directory (.fleet/, texts handed
// over as files), so it must be somewhere the user means agents to work,
// never / or /etc.
func CwdRoots() []string {
	var roots []string
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		roots = append(roots, h)
	}
	if wd, err := os.Getwd(); err == nil && wd != "/" {
		roots = append(roots, wd)
	}
	return append(roots, os.TempDir())
}

// CheckCwd refuses a spawn's working directory the role does not allow:
// it must be absolute, an existing directory, never / itself, and, once
// its symlinks are resolved, within one of the role's CwdRoots (default
// CwdRoots()), whose symlinks are resolved too. An empty cwd (herdr's
// default for the pane) is the caller's to decide.
func (r Role) CheckCwd(cwd string) error {
	if err := CheckWord("cwd", cwd); err != nil {
		return fmt.Errorf("%w: %w", ErrCwd, err)
	}
	if !filepath.IsAbs(cwd) {
		return fmt.Errorf("%w: cwd %q must be an absolute path", ErrCwd, cwd)
	}
	real, err := filepath.EvalSymlinks(cwd)
	if err != nil {
		return fmt.Errorf("%w: cwd %q: %w", ErrCwd, cwd, err)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: cwd %q is not a directory", ErrCwd, cwd)
	}
	if real == "/" {
		return fmt.Errorf("%w: cwd %q is the root directory: fleetd writes the agent's files (.fleet/) in its working directory", ErrCwd, cwd)
	}
	roots, named := r.CwdRoots, "role's cwd_roots"
	if len(roots) == 0 {
		roots, named = CwdRoots(), "default roots (fleetd's home, working directory and temporary directory; a role's cwd_roots replaces them)"
	}
	for _, root := range roots {
		rr, err := filepath.EvalSymlinks(root)
		if err != nil {
			continue
		}
		if rr == "/" || real == rr || strings.HasPrefix(real, rr+string(filepath.Separator)) {
			return nil
		}
	}
	return fmt.Errorf("%w: cwd %q is outside role %q's %s: %s", ErrCwd, cwd, r.Name, named, strings.Join(roots, ", "))
}
