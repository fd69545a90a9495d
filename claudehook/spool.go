package claudehook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	events "github.com/fleetd/fleetd/events/eventcore"
)

// SpoolDir is where hooks keep events NATS did not take: FLEET_SPOOL_DIR,
// else $XDG_STATE_HOME/fleetd/spool, else ~/.local/state/fleetd/spool.
func SpoolDir(env func(string) string) string {
	if d := env("FLEET_SPOOL_DIR"); d != "" {
		return d
	}
	if d := env("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "fleetd", "spool")
	}
	home := env("HOME")
	if home == "" {
		if h, err := os.UserHomeDir(); err == nil {
			home = h
		} else {
			return filepath.Join(os.TempDir(), "fleetd", "spool")
		}
	}
	return filepath.Join(home, ".local", "state", "fleetd", "spool")
}

// Spool writes each event as dir/<subject>/<id>.json, atomically (a temp
// file renamed into place), so a replayer never reads half an event. The
// events must have their ids set.
func Spool(dir string, evs []events.Event) error {
	for _, ev := range evs {
		if ev.ID == "" {
			return fmt.Errorf("%w: event %s has no id", ErrSpool, ev.Type())
		}
		if err := events.ValidAgentID(ev.Subject); err != nil {
			return fmt.Errorf("%w: %v", ErrSpool, err)
		}
		b, err := json.Marshal(ev)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrSpool, err)
		}
		sub := filepath.Join(dir, ev.Subject)
		if err := os.MkdirAll(sub, 0o700); err != nil {
			return fmt.Errorf("%w: %v", ErrSpool, err)
		}
		tmp, err := os.CreateTemp(sub, "."+ev.ID+".*.tmp")
		if err != nil {
			return fmt.Errorf("%w: %v", ErrSpool, err)
		}
		_, werr := tmp.Write(b)
		serr := tmp.Sync()
		cerr := tmp.Close()
		if err := errors.Join(werr, serr, cerr); err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("%w: %v", ErrSpool, err)
		}
		if err := os.Rename(tmp.Name(), filepath.Join(sub, ev.ID+".json")); err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("%w: %v", ErrSpool, err)
		}
	}
	return nil
}

// spooled is one event file waiting in the spool.
type spooled struct{ id, path string }

// pending lists the event files in dir (one agent's spool) and in its
// subdirectories (the spool root), oldest first: ids are ULIDs, so their
// order is their time order across every agent's directory.
func pending(dir string) ([]spooled, error) {
	var paths []string
	for _, pattern := range []string{"*.json", filepath.Join("*", "*.json")} {
		ps, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			return nil, err
		}
		paths = append(paths, ps...)
	}
	out := make([]spooled, 0, len(paths))
	for _, p := range paths {
		base := filepath.Base(p)
		if strings.HasPrefix(base, ".") {
			continue
		}
		out = append(out, spooled{id: strings.TrimSuffix(base, ".json"), path: p})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

// ReplaySpool appends the events spooled under dir (the spool root, or one
// agent's directory in it), oldest first, each with its original id, and
// deletes each file only once its append was acknowledged. An event may
// have landed before (its append timed out, yet was stored): within the
// stream's dedupe window (2 minutes) its id makes the append a no-op, and
// past it ReplaySpool looks for the id in the log first (see stored), so a
// replay stores each event once however late it comes. It stops at the
// first failed append, keeping order; a file that is not a valid event is
// renamed to *.bad and reported, never retried. n counts the events
// replayed, those found already stored included. A missing dir is an
// empty spool.
func ReplaySpool(ctx context.Context, log Log, dir string) (n int, err error) {
	return replay(ctx, log, dir, 0, nil, func(ctx context.Context, ev events.Event) (bool, error) { return stored(ctx, log, ev) })
}

// FreshWindow is how young a spooled event must be for ReplayFresh: well
// inside the stream's 2-minute dedupe window, where its id alone makes a
// repeat a no-op.
const FreshWindow = 90 * time.Second

// ReplayFresh is ReplaySpool for a replayer that may not read the log (an
// agent's hook, whose NATS identity may only publish its own events): it
// replays the spooled events younger than FreshWindow by now, which the
// dedupe window guards, and stops at the first older one, leaving it and
// what follows for the gateway's Replayer, which looks in the log first.
func ReplayFresh(ctx context.Context, log Appender, dir string, now func() time.Time) (n int, err error) {
	if now == nil {
		now = time.Now
	}
	return replay(ctx, log, dir, FreshWindow, now, nil)
}

// replay appends the spooled events of dir to log: those younger than
// fresh (by now) when fresh is set, else each that isStored says is not in
// the log yet.
func replay(ctx context.Context, log Appender, dir string, fresh time.Duration, now func() time.Time,
	isStored func(context.Context, events.Event) (bool, error)) (n int, err error) {
	files, err := pending(dir)
	if err != nil {
		return 0, fmt.Errorf("replay spool %s: %w", dir, err)
	}
	reg := events.NewRegistry()
	var bad []error
	for _, f := range files {
		raw, err := os.ReadFile(f.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // another replayer took it
		}
		if err != nil {
			return n, errors.Join(append(bad, fmt.Errorf("replay %s: %w", f.path, err))...)
		}
		ev, err := reg.Decode("", raw)
		if err == nil && ev.ID != f.id {
			err = fmt.Errorf("file name says %s, event says %s", f.id, ev.ID)
		}
		if err != nil {
			bad = append(bad, fmt.Errorf("replay %s: %w (moved aside as .bad)", f.path, err))
			_ = os.Rename(f.path, f.path+".bad")
			continue
		}
		var found bool
		switch {
		case fresh == 0:
			found, err = isStored(ctx, ev)
		case ev.Time.IsZero() || now().Sub(ev.Time) > fresh:
			// Keep order: this one and what follows wait together.
			return n, errors.Join(bad...)
		}
		if err == nil && !found {
			_, err = log.Append(ctx, ev)
		}
		if err != nil {
			return n, errors.Join(append(bad, fmt.Errorf("replay %s: %w", f.id, err))...)
		}
		n++
		if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			bad = append(bad, fmt.Errorf("replay %s: appended but not removed: %w", f.path, err))
		}
	}
	return n, errors.Join(bad...)
}

// storedSkew is how far before an event's own time its stored copy is
// looked for: the hook's clock and the stream leader's may differ.
const storedSkew = 10 * time.Minute

// stored reports whether ev is already in the log. It is the cheapest
// exact answer: the subject is known (the agent and the event's kind) and
// the event cannot have been stored before it was made, so it reads that
// one subject from ev.Time (less storedSkew) on — a handful of events —
// and compares ids. Two replays racing past this check both append within
// the dedupe window, which stores one. Readers need not deduplicate: the
// projections' per-agent memory of recent ids stays as a second line, but
// the herdr bridge, a plan's views and `nats` all see each event once.
func stored(ctx context.Context, log Log, ev events.Event) (bool, error) {
	subject, err := ev.StreamSubject()
	if err != nil {
		return false, err
	}
	var since time.Time
	if !ev.Time.IsZero() {
		since = ev.Time.Add(-storedSkew)
	}
	for got, err := range log.Read(ctx, events.Query{Subjects: []string{subject}, Since: since}) {
		if err != nil {
			return false, fmt.Errorf("look for %s in the log: %w", ev.ID, err)
		}
		if got.ID == ev.ID {
			return true, nil
		}
	}
	return false, nil
}

// Replayer drains a spool into the log: the gateway runs one so events
// spooled while it was down reach the log even if the agent never fires
// another hook. It replays as soon as a hook spools an event (it watches
// the spool), and every Interval besides.
//
// A hook spools not only when NATS is down: a hook that cannot connect
// within its short bound (a burst of a hundred agents' Stop hooks
// starting at once on two cores) spools too, and its reply — what a lead
// is blocked on — waited for the next pass, up to Interval later.
type Replayer struct {
	// Dir is the spool root (SpoolDir).
	Dir string
	// Log receives the events (an events.Log).
	Log Log
	// Interval between replays; default 10 s. The first runs at once.
	Interval time.Duration
	// OnReplay hears each pass that appended events or failed (may be nil).
	OnReplay func(n int, err error)

	wakeOnce sync.Once
	wake     chan struct{}
}

func (r *Replayer) wakeCh() chan struct{} {
	r.wakeOnce.Do(func() { r.wake = make(chan struct{}, 1) })
	return r.wake
}

// Wake asks for a pass now: the log takes writes again after refusing
// them, and what the hooks spooled meanwhile is what turns wait for. It
// never blocks.
func (r *Replayer) Wake() {
	select {
	case r.wakeCh() <- struct{}{}:
	default:
	}
}

// Run replays the spool now, whenever an event is spooled, and every
// Interval until ctx ends; it returns nil then. Errors of a pass go to
// OnReplay and never stop it; a spool that cannot be watched (say, out of
// inotify watches) is replayed every Interval only, and OnReplay hears
// why.
func (r *Replayer) Run(ctx context.Context) error {
	interval := r.Interval
	if interval <= 0 {
		interval = 10 * time.Second
	}
	if stop, err := r.watch(ctx); err != nil {
		if r.OnReplay != nil {
			r.OnReplay(0, fmt.Errorf("watch the spool %s (replaying every %s only): %w", r.Dir, interval, err))
		}
	} else {
		defer stop()
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		pass, cancel := context.WithTimeout(ctx, max(interval, 5*time.Second))
		n, err := ReplaySpool(pass, r.Log, r.Dir)
		cancel()
		if r.OnReplay != nil && (n > 0 || err != nil) && ctx.Err() == nil {
			r.OnReplay(n, err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		case <-r.wakeCh():
		}
	}
}

// watch wakes r whenever an event lands in the spool: the spool root and
// each agent's directory in it are watched, a new agent directory as it
// appears. Spool renames each event into place as <id>.json, which the
// watch sees as a create.
func (r *Replayer) watch(ctx context.Context) (stop func(), err error) {
	root := filepath.Clean(r.Dir)
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, err
	}
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	if err := w.Add(root); err != nil {
		w.Close()
		return nil, err
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		w.Close()
		return nil, err
	}
	for _, e := range entries {
		if e.IsDir() {
			_ = w.Add(filepath.Join(root, e.Name())) // the periodic pass covers a directory not watched
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if !ev.Has(fsnotify.Create) {
					continue
				}
				if filepath.Dir(ev.Name) == root {
					if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() {
						_ = w.Add(ev.Name)
						// Its first event may have landed before the watch.
						r.Wake()
					}
					continue
				}
				if strings.HasSuffix(ev.Name, ".json") {
					r.Wake()
				}
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
			}
		}
	}()
	return func() {
		w.Close()
		<-done
	}, nil
}
