package claudehook

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
	"github.com/oklog/ulid/v2"

	events "github.com/fleetd/fleetd/events/eventcore"
)

// Claude Code runs fleetd's UserPromptSubmit hook async (the settings'
// "async": true): the agent no longer waits for a hook's process start
// and round trips to NATS before it calls the model. What that hook
// appended must still come before anything a later hook of the same turn
// appends or reports — a Stop's idle before the prompt's working would
// leave the agent marked at work, and herdr's pane too. So the prompt's
// hook, when it is done (its events appended or spooled), leaves a mark
// for its prompt beside the agent's spool, holding the id of its last
// event; a later hook run with --after-prompt (Stop, StopFailure,
// Notification) waits for its prompt's mark before its first append or
// report, bounded by Options.PromptWait, and gives its events ids after
// the prompt's, so a spool replayed in id order keeps them in order too,
// and times them after its wait: the views order an agent's statuses by
// time, and on a fast turn the Stop can make its events before the
// prompt's hook makes its own.
// It dials NATS and reads the agent's turn meanwhile: on a fast turn the
// two hooks overlap instead of queueing. A mark per prompt, not one for
// the agent: a prompt submitted while a turn runs must not hide the
// running turn's mark from its Stop.

// markPrefix starts a mark's file name in the agent's spool directory: a
// dot file, which the spool's replay never reads as an event.
const markPrefix = ".prompt-"

// endedPrefix starts the name of the mark a Stop (or StopFailure) leaves
// when it gave up waiting for its prompt's hook and ended the turn
// without it: that hook, should it come after all, must not say the
// agent is working (the views order statuses by time, the gateway by
// their place in the log, and herdr by the report's seq: a working after
// the turn's idle would outlast the turn in all three, and nothing would
// be typed into the agent again).
const endedPrefix = ".ended-"

// markLimit bounds the marks an agent's directory holds: past it, a
// prompt's hook removes all but the newest markLimit/2. A turn's later
// hooks come long before markLimit/2 other prompts of the same agent
// have been submitted (and one whose mark is gone only waits PromptWait).
const markLimit = 64

// markPath is prompt's mark in the agent's spool directory, or false for
// a prompt id that is not a plain file name (Claude Code's are UUIDs):
// such a prompt is neither marked nor waited for.
func markPath(spool, agent, prompt string) (string, bool) {
	return markFile(spool, agent, markPrefix, prompt)
}

// markFile is the file of a mark with prefix for prompt (see markPath).
func markFile(spool, agent, prefix, prompt string) (string, bool) {
	if prompt == "" || len(prompt) > 128 || strings.IndexFunc(prompt, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_')
	}) >= 0 {
		return "", false
	}
	return filepath.Join(spool, agent, prefix+prompt), true
}

// markEnded leaves prompt's ended mark (endedPrefix).
func markEnded(spool, agent, prompt string, stderr io.Writer) {
	path, ok := markFile(spool, agent, endedPrefix, prompt)
	if !ok {
		return
	}
	err := os.MkdirAll(filepath.Dir(path), 0o700)
	if err == nil {
		err = os.WriteFile(path, nil, 0o600)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fleetd hook: mark the turn ended: %v\n", err)
	}
}

// ended reports whether prompt's turn was ended by a later hook that gave
// up waiting for the prompt's hook (markEnded).
func ended(spool, agent, prompt string) bool {
	path, ok := markFile(spool, agent, endedPrefix, prompt)
	if !ok {
		return false
	}
	_, err := os.Lstat(path)
	return err == nil
}

// markPrompt records that prompt's UserPromptSubmit hook is done, and the
// id of the last event it made, in one rename (a reader sees no mark or
// the whole one), and keeps the marks within markLimit.
func markPrompt(spool, agent, prompt, lastID string, stderr io.Writer) {
	path, ok := markPath(spool, agent, prompt)
	if !ok {
		return
	}
	err := os.MkdirAll(filepath.Dir(path), 0o700)
	if err == nil {
		err = os.WriteFile(path+".tmp", []byte(lastID), 0o600)
	}
	if err == nil {
		err = os.Rename(path+".tmp", path)
	}
	if err != nil {
		fmt.Fprintf(stderr, "fleetd hook: mark the prompt done: %v\n", err)
		return
	}
	trimMarks(filepath.Dir(path))
}

// trimMarks removes all but the newest markLimit/2 marks in dir once it
// holds more than markLimit: a look at the directory's names each
// prompt, a stat of each mark once in markLimit/2 prompts.
func trimMarks(dir string) {
	names, _ := filepath.Glob(filepath.Join(dir, markPrefix+"*"))
	ends, _ := filepath.Glob(filepath.Join(dir, endedPrefix+"*"))
	names = append(names, ends...)
	names = slices.DeleteFunc(names, func(n string) bool { return strings.HasSuffix(n, ".tmp") })
	if len(names) <= markLimit {
		return
	}
	type mark struct {
		name string
		at   time.Time
	}
	marks := make([]mark, 0, len(names))
	for _, n := range names {
		if fi, err := os.Stat(n); err == nil {
			marks = append(marks, mark{n, fi.ModTime()})
		}
	}
	slices.SortFunc(marks, func(a, b mark) int { return b.at.Compare(a.at) })
	for _, m := range marks[min(len(marks), markLimit/2):] {
		os.Remove(m.name)
	}
}

// promptWaitTick is how often a later hook looks for the mark when it
// cannot watch the directory for it (twenty times that when it can).
const promptWaitTick = time.Millisecond

// awaitPrompt waits until prompt's UserPromptSubmit hook has marked
// itself done, for up to wait (or until ctx ends), and returns the id of
// the last event that hook made ("" when it made none, or was not waited
// for): past wait, a prompt hook that never ran or died is not waited
// for, and the caller goes on; done says whether the mark came (or
// there was none to wait for). It watches the agent's directory
// (inotify), so the mark is seen the moment it is renamed into place: on
// a fast turn the wait is on the turn's path.
func awaitPrompt(ctx context.Context, spool, agent, prompt string, wait time.Duration, stderr io.Writer) (last string, done bool) {
	path, ok := markPath(spool, agent, prompt)
	if !ok {
		return "", true
	}
	dir := filepath.Dir(path)
	marked := func() (string, bool) {
		b, err := os.ReadFile(path)
		return string(b), err == nil
	}
	if last, ok := marked(); ok {
		return last, true
	}
	timeout := time.NewTimer(wait)
	defer timeout.Stop()
	// A change in the directory, or a tick where it cannot be watched.
	var changed <-chan fsnotify.Event
	tick := time.NewTicker(promptWaitTick)
	defer tick.Stop()
	if os.MkdirAll(dir, 0o700) == nil {
		if w, err := fsnotify.NewWatcher(); err == nil {
			defer w.Close()
			if w.Add(dir) == nil {
				changed = w.Events
				tick.Reset(20 * promptWaitTick) // a backstop only
			}
		}
	}
	for {
		// Looked at again after the watch began: a mark renamed in
		// before it is not missed.
		if last, ok := marked(); ok {
			return last, true
		}
		select {
		case <-ctx.Done():
			return "", false
		case <-timeout.C:
			fmt.Fprintf(stderr, "fleetd hook: the prompt's UserPromptSubmit hook was not done within %v; going on\n", wait)
			return "", false
		case <-changed:
		case <-tick.C:
		}
	}
}

// idsAfter gives each of evs, none of them sent yet, an id after last
// and after the one before it, where its own is not: ids made in two
// processes within one millisecond sort by their random part.
func idsAfter(evs []events.Event, last string) {
	prev, err := ulid.ParseStrict(last)
	if err != nil {
		return
	}
	for i := range evs {
		id, err := ulid.ParseStrict(evs[i].ID)
		if err != nil || id.Compare(prev) <= 0 {
			id = next(prev)
			evs[i].ID = id.String()
		}
		prev = id
	}
}

// next is the ULID one after u: the same millisecond, its random part
// plus one (a carry runs into the time, as ulid's monotonic source's).
func next(u ulid.ULID) ulid.ULID {
	for i := len(u) - 1; i >= 0; i-- {
		u[i]++
		if u[i] != 0 {
			break
		}
	}
	return u
}
