package herdrbridge

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// InboxDir is where, under an agent's working directory, the texts that
// go as files are written. It holds a .gitignore of "*", so nothing in it
// is ever committed from the agent's checkout.
const InboxDir = ".fleet/inbox"

// inboxKeep is how long an inbox file is kept: long enough for the agent
// to read it again later in its conversation.
const inboxKeep = 7 * 24 * time.Hour

// writeInbox writes a turn's text to <cwd>/.fleet/inbox/<turn>.md and
// returns the file and the short prompt that hands it over with an @
// mention (which makes Claude Code attach the file's content to the
// prompt, verbatim: measured with 2.1.328). The prompt is plain ASCII and
// short, so it can itself be typed as one paste.
func writeInbox(cwd, turn, text, why string) (file, prompt string, err error) {
	if cwd == "" {
		return "", "", errors.New("the agent's working directory is not known")
	}
	dir := filepath.Join(cwd, InboxDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", err
	}
	ignore := filepath.Join(cwd, ".fleet", ".gitignore")
	if _, err := os.Stat(ignore); errors.Is(err, os.ErrNotExist) {
		if err := os.WriteFile(ignore, []byte("# fleetd's per-agent files (texts handed over as files): never committed\n*\n"), 0o644); err != nil {
			return "", "", err
		}
	}
	file = filepath.Join(dir, turn+".md")
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		return "", "", err
	}
	pruneInbox(dir, time.Now().Add(-inboxKeep))
	// The absolute path names the file whatever Claude Code's own working
	// directory is; an @ mention ends at whitespace, so a directory with a
	// space in it is named relative to the agent's working directory.
	ref := file
	if strings.ContainsAny(ref, " \t") {
		ref = filepath.Join(InboxDir, turn+".md")
	}
	if strings.ContainsAny(ref, " \t") {
		return "", "", fmt.Errorf("the inbox file %s has whitespace in its path, which an @ mention cannot name", file)
	}
	prompt = fmt.Sprintf("Your prompt for this turn is the whole content of @%s (%d bytes; it came as a file because %s). Read all of it and act on it as if it had been typed here.", ref, len(text), why)
	return file, prompt, nil
}

// pruneInbox removes inbox files older than before, best effort.
func pruneInbox(dir string, before time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if info, err := e.Info(); err == nil && !e.IsDir() && info.ModTime().Before(before) {
			os.Remove(filepath.Join(dir, e.Name()))
		}
	}
}
