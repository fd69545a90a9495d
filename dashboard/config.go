package dashboard

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/projections"
)

// Fleet is what the dashboard reads live: the projection's views and its
// change feed (a projections.Projector is one).
type Fleet interface {
	projections.Views
	// Subscribe delivers a change for every row a folded event changed;
	// cancel ends it.
	Subscribe() (changes <-chan projections.Change, cancel func())
}

// Budgets is what the dashboard asks of package budget.
type Budgets interface {
	// Agent is how the agent stands against its budgets; nil when under
	// 80% of every limit.
	Agent(a projections.Agent) *projections.BudgetState
}

// Config is what a dashboard runs with. The zero value of every field but
// Log and Fleet has a default (setDefaults).
type Config struct {
	Log   events.Log
	Fleet Fleet
	// Host and Version are shown in the page's header.
	Host    string
	Version string
	Logger  *slog.Logger
	// Now is the clock of live views' ages; default time.Now.
	Now func() time.Time
	// Budgets, when set, says which agents are at 80% or more of a
	// budget (package budget's Checker), shown in the live fleet view.
	// The past is shown without: budgets are judged against the clock.
	Budgets Budgets

	// MaxStreams bounds the live streams open at once (one per open
	// page); one more is 429. Default 32.
	MaxStreams int
	// WriteTimeout drops a stream whose reader takes longer than this to
	// accept one update. Default 30s.
	WriteTimeout time.Duration
	// Batch is the least time between two updates of one live view: the
	// changes in between are shown at once. Frames over 256 KiB (a fleet
	// of hundreds of agents) wait at least 4×Batch. Default 250ms.
	Batch time.Duration
	// Refresh re-renders the fleet view even when nothing changed, so
	// heartbeat ages stay true. Default 5s.
	Refresh time.Duration
	// LogRows is how many events the log view shows (the page drops the
	// oldest beyond it); LogScan how far back, in stream sequences, its
	// first page looks for them. Defaults 200 and 5,000.
	LogRows int
	LogScan int
	// TurnRows bounds the rows of the turns view and of an agent's
	// conversation. Default 200.
	TurnRows int
	// Jobs bounds the jobs the jobs view lists. Default 50.
	Jobs int
	// Snapshots is how many folds of the past are kept (each is the whole
	// fleet as of a point); SnapshotTurns bounds the final turns one
	// holds, as Options.TurnCacheSize bounds the gateway's. Defaults 4
	// and 10,000.
	Snapshots     int
	SnapshotTurns int
	// MaxFolds bounds the folds of the past running at once: each
	// replays the log from its start, in memory. A view of a point no
	// fold holds waits up to FoldWait for one to end, and is then
	// refused (429). A point already folded, or being folded, needs
	// none. Defaults 2 and 2s.
	MaxFolds int
	FoldWait time.Duration
	// FoldTimeout bounds one fold of the past. Default 2m.
	FoldTimeout time.Duration
	// MaxText is how much of a text, a reply or an event's JSON a page
	// shows. Default 64 KiB.
	MaxText int
	// Identity is who the page's actions act as ("from" in what they
	// send): the shim's one identity stands behind them. Default
	// "dashboard".
	Identity string
}

func (c *Config) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Identity == "" {
		c.Identity = "dashboard"
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	defD := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MaxStreams, 32)
	defD(&c.WriteTimeout, 30*time.Second)
	defD(&c.Batch, 250*time.Millisecond)
	defD(&c.Refresh, 5*time.Second)
	def(&c.LogRows, 200)
	def(&c.LogScan, 5000)
	def(&c.TurnRows, 200)
	def(&c.Jobs, 50)
	def(&c.Snapshots, 4)
	def(&c.SnapshotTurns, 10_000)
	def(&c.MaxFolds, 2)
	defD(&c.FoldWait, 2*time.Second)
	defD(&c.FoldTimeout, 2*time.Minute)
	def(&c.MaxText, 64<<10)
}

// Validate reports every problem at once.
func (c Config) Validate() error {
	var errs []error
	if c.Log == nil {
		errs = append(errs, errors.New("no Log"))
	}
	if c.Fleet == nil {
		errs = append(errs, errors.New("no Fleet"))
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"MaxStreams", int64(c.MaxStreams)}, {"WriteTimeout", int64(c.WriteTimeout)}, {"Batch", int64(c.Batch)},
		{"Refresh", int64(c.Refresh)}, {"LogRows", int64(c.LogRows)}, {"LogScan", int64(c.LogScan)},
		{"TurnRows", int64(c.TurnRows)}, {"Jobs", int64(c.Jobs)}, {"Snapshots", int64(c.Snapshots)},
		{"SnapshotTurns", int64(c.SnapshotTurns)}, {"FoldTimeout", int64(c.FoldTimeout)}, {"MaxText", int64(c.MaxText)},
		{"MaxFolds", int64(c.MaxFolds)}, {"FoldWait", int64(c.FoldWait)},
	} {
		if f.v <= 0 {
			errs = append(errs, fmt.Errorf("%s %d: must be positive", f.name, f.v))
		}
	}
	if len(errs) > 0 {
		return errors.Join(append([]error{ErrConfig}, errs...)...)
	}
	return nil
}
