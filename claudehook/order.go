package claudehook

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	events "github.com/fleetd/fleetd/events/eventcore"
)

// Claude Code runs fleetd's UserPromptSubmit hook async (the settings'
// "async": true): the agent no longer waits for a hook's process start
// and round trips to NATS before it calls the model. What that hook
// appended must still come before anything a later hook of the same turn
// appends or reports — a Stop's idle before the prompt's working would
// leave the agent marked at work, and herdr's pane too. So the prompt's
// hook, when it is done (its events appended or spooled, herdr told),
// leaves the prompt's id and its last event's in a mark beside the
// agent's spool; a later hook run with --after-prompt (Stop, StopFailure,
// Notification) waits for that mark before its first append or report,
// bounded by Options.PromptWait, and gives its events ids after the
// prompt's, so a spool replayed in id order keeps them in order too. It
// dials NATS and reads the agent's turn meanwhile: on a fast turn the two
// hooks overlap instead of queueing.

// promptMark is the mark's file name in the agent's spool directory: a
// dot file, which the spool's replay never reads as an event.
const promptMark = ".prompt-done"

// markPrompt records that prompt's UserPromptSubmit hook is done, and the
// id of the last event it made, in one rename: a reader sees the old mark
// or the new one.
func markPrompt(spool, agent, prompt, lastID string, stderr io.Writer) {
	dir := filepath.Join(spool, agent)
	err := os.MkdirAll(dir, 0o700)
	tmp := filepath.Join(dir, promptMark+".tmp")
	if err == nil {
		err = os.WriteFile(tmp, []byte(prompt+" "+lastID), 0o600)
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, promptMark))
	}
	if err != nil {
		fmt.Fprintf(stderr, "fleetd hook: mark the prompt done: %v\n", err)
	}
}

// promptWaitTick is how often a later hook looks for the mark: the
// prompt's hook takes a few milliseconds.
const promptWaitTick = time.Millisecond

// awaitPrompt waits until prompt's UserPromptSubmit hook has marked
// itself done, for up to wait (or until ctx ends), and returns the id of
// the last event that hook made ("" when it made none, or was not waited
// for): past wait, a prompt hook that never ran or died is not waited
// for, and the caller goes on.
func awaitPrompt(ctx context.Context, spool, agent, prompt string, wait time.Duration, stderr io.Writer) string {
	path := filepath.Join(spool, agent, promptMark)
	deadline := time.Now().Add(wait)
	for {
		if b, err := os.ReadFile(path); err == nil {
			if p, last, _ := strings.Cut(string(b), " "); p == prompt {
				return last
			}
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(stderr, "fleetd hook: the prompt's UserPromptSubmit hook was not done within %v; going on\n", wait)
			return ""
		}
		select {
		case <-ctx.Done():
			return ""
		case <-time.After(promptWaitTick):
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
