package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/samber/lo"

	"github.com/fleetd/fleetd/embeddednats"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/gateway"
	"github.com/fleetd/fleetd/projections"
)

// micro: events.Log appends against raw JetStream publishes, one at a
// time and batched (the same bodies as the events package's Go
// benchmarks). Each row's op and its base are timed beside each other
// (see group), not one after the other.
func (s stage) micro(ctx context.Context) ([]Row, error) {
	n, err := StartNATS(ctx, filepath.Join(s.dir, "nats"), s.Sync)
	if err != nil {
		return nil, err
	}
	defer n.Close()
	one, err := s.group(ctx, 1,
		timed{"Log.Append", func() Op { return LogAppend(n.Log) }},
		timed{"js.PublishMsg", func() Op { return RawPublish(n.JS) }})
	if err != nil {
		return nil, err
	}
	// The batched ops share their rounds: AppendBatch is timed once, and
	// both of its rows compare it with a base timed beside it.
	batched, err := s.group(ctx, BatchSize,
		timed{"Log.AppendBatch", func() Op { return LogAppendBatch(n.Log) }},
		timed{"js.PublishMsgAsync", func() Op { return RawPublishAsync(n.JS) }},
		timed{"Log.AppendMany", func() Op { return LogAppendMany(n.Log) }},
		timed{"raw atomic batch", func() Op { return RawAtomicBatch(n.JS) }})
	if err != nil {
		return nil, err
	}
	appendOne := one.row(0, 1)
	appendOne.Name, appendOne.Target = "append: Log.Append, one at a time", "≥ 0.80×"
	appendOne.Check(appendOne.Ratio() >= 0.8)
	batch := batched.row(0, 1)
	batch.Name, batch.Target = fmt.Sprintf("append: Log.AppendBatch, %d per batch", BatchSize), "≥ 0.80×"
	batch.Check(batch.Ratio() >= 0.8)
	atomic := batched.row(0, 3)
	atomic.Name, atomic.Status = "append: Log.AppendBatch vs raw atomic batch", StatusNone
	atomic.Note = "what AppendBatch asks of JetStream without fleetd's code: shows how much of the batched row is the server's atomic-batch staging"
	atomic.Ratio()
	many := batched.row(2, 1)
	many.Name, many.Target = fmt.Sprintf("append: Log.AppendMany (not atomic), %d per call", BatchSize), "≥ 0.80×"
	many.Note = "the bulk path without all-or-none: each event's id is its dedupe key, so a retry stores only what is missing"
	many.Check(many.Ratio() >= 0.8)
	return []Row{appendOne, batch, many, atomic}, nil
}

// pairRounds is how many rounds group times each op in.
const pairRounds = 4

// timed is an op of a group, by name; mk makes it afresh for each round.
type timed struct {
	name string
	mk   func() Op
}

// timings are a group's median rates (events a second), by op.
type timings struct {
	ops   []timed
	rates []float64
	n     []int // events each op stored
}

// row compares op i with op base: a row of their median rates, its N the
// events op i stored.
func (t timings) row(i, base int) Row {
	return Row{N: t.n[i], Unit: UnitPerSec, P50: t.rates[i], Base: t.rates[base], BaseName: t.ops[base].name}
}

// group times ops beside each other in pairRounds rounds of half the
// bench time each, every op once a round, each round's order turned by
// one (two ops: a b, b a, a b, b a), and gives each op's median rate.
// Timed one after the other, the later op pays for the stream the earlier
// grew — its message-id dedupe window, its index — and a ratio measures
// the order: Log.AppendMany timed last read 0.63× against a base timed
// first, and 0.83× beside it. Each round makes its ops afresh: a raw op's
// message ids count from 1 with it, and a second run of the same op would
// be stored as duplicates.
func (s stage) group(ctx context.Context, perOp int, ops ...timed) (timings, error) {
	rates := make([][]float64, len(ops))
	t := timings{ops: ops, rates: make([]float64, len(ops)), n: make([]int, len(ops))}
	for round := range pairRounds {
		for k := range ops {
			i := (k + round) % len(ops)
			r, err := Run(ctx, max(s.Size.BenchTime/2, time.Millisecond), ops[i].mk())
			if err != nil {
				return timings{}, fmt.Errorf("benchmark %s: %w", ops[i].name, err)
			}
			s.progress("%s, round %d: %d ops, %.0f ev/s", ops[i].name, round+1, r.N, r.PerSecond(perOp))
			rates[i] = append(rates[i], r.PerSecond(perOp))
			t.n[i] += r.N * perOp
		}
	}
	for i := range ops {
		t.rates[i] = medianOf(rates[i])
	}
	return t, nil
}

// ratioList prints ratios as "0.48×, 0.52×".
func ratioList(rs []float64) string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%.2f×", r)
	}
	return strings.Join(out, ", ")
}

// medianOf is the median of vs (the mean of the middle two of an even
// count).
func medianOf(vs []float64) float64 {
	c := slices.Clone(vs)
	slices.Sort(c)
	if len(c) == 0 {
		return 0
	}
	if len(c)%2 == 0 {
		return (c[len(c)/2-1] + c[len(c)/2]) / 2
	}
	return c[len(c)/2]
}

// rebuild: fold a log of rebuild events from scratch with the real
// projection, against a raw ordered-consumer read of the same stream and a
// decoding read (events.Log.Read). The log is written with SyncAlways off
// (how it is written is not measured), then the server restarts with the
// stage's setting.
func (s stage) rebuild(ctx context.Context) ([]Row, error) {
	size := s.Size.Rebuild
	dir := filepath.Join(s.dir, "nats")
	n, err := StartNATS(ctx, dir, false)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	last, err := Fill(ctx, n.JS, NewFleet(s.Size.Hosts, s.Size.Agents), size)
	filled := time.Now()
	n.Close()
	if err != nil {
		return nil, err
	}
	s.progress("filled %d events in %s", last, time.Since(start).Round(time.Millisecond))
	if n, err = StartNATS(ctx, dir, s.Sync); err != nil {
		return nil, err
	}
	closeNATS := sync.OnceFunc(n.Close)
	defer closeNATS()
	if _, _, err := RawRead(ctx, n.JS); err != nil { // warm the server's block cache for both readers alike
		return nil, err
	}
	start = time.Now()
	decoded := 0
	// Read as a rebuild's catch-up reads: as far ahead, decoded on as
	// many goroutines.
	q := events.Query{Prefetch: projections.CatchUpPrefetch, PrefetchBytes: projections.CatchUpPrefetchBytes(n.NC.MaxPayload()), Decoders: runtime.GOMAXPROCS(0)}
	for _, err := range n.Log.Read(ctx, q) {
		if err != nil {
			return nil, err
		}
		decoded++
	}
	decD := time.Since(start)
	s.progress("decoded %d in %s", decoded, decD.Round(time.Millisecond))
	// Raw reads and rebuilds alternate, so a slow minute of the machine
	// falls on both; the row compares their medians.
	var raws, rebs, ratios []float64
	var count int
	var applied uint64
	for range max(1, s.Size.RebuildRuns) {
		rawD, n1, err := RawRead(ctx, n.JS)
		if err != nil {
			return nil, err
		}
		rebD, a, err := Rebuild(ctx, n, s.Sync)
		if err != nil {
			return nil, err
		}
		count, applied = n1, a
		s.progress("raw read %d in %s, rebuilt to %d in %s", count, rawD.Round(time.Millisecond), applied, rebD.Round(time.Millisecond))
		raws, rebs = append(raws, rawD.Seconds()), append(rebs, rebD.Seconds())
		ratios = append(ratios, rawD.Seconds()/rebD.Seconds())
	}
	if applied != last || count != int(last) || decoded != count {
		return nil, fmt.Errorf("rebuild: log has %d events; raw read %d, decoded %d, folded to %d", last, count, decoded, applied)
	}
	rawD, rebD := time.Duration(medianOf(raws)*float64(time.Second)), time.Duration(medianOf(rebs)*float64(time.Second))
	perSec := func(d time.Duration) float64 { return float64(count) / d.Seconds() }
	reb := Row{Name: "rebuild: projection fold of the whole log", N: count, Unit: UnitPerSec, P50: perSec(rebD),
		Base: perSec(rawD), BaseName: "raw ordered read", Target: "≥ 0.50×",
		Note: fmt.Sprintf("median of %d: rebuild %s, raw read %s (each run's ratio %s); decode-only read %s", len(rebs),
			rebD.Round(time.Millisecond), rawD.Round(time.Millisecond), ratioList(ratios), decD.Round(time.Millisecond))}
	reb.Check(reb.Ratio() >= 0.5)
	dec := Row{Name: "rebuild: events.Log.Read (decode, no fold)", N: count, Unit: UnitPerSec, P50: perSec(decD),
		Base: perSec(rawD), BaseName: "raw ordered read", Status: StatusNone}
	dec.Ratio()
	closeNATS() // the gateways below open the same store
	starts, err := s.restarts(ctx, dir, count, filled)
	if err != nil {
		return nil, err
	}
	return append([]Row{reb, dec}, starts...), nil
}

// restarts starts a gateway twice on the filled store and measures how
// long each start takes until it serves with its views current: the
// first folds the whole log (no checkpoint yet), the second — `fleetd up`
// after a stop — restores the views from their checkpoint and folds only
// what came after it. Both run while the whole log is in the stream's
// dedupe window, which nats-server reloads from every message in it
// before it serves: the worst case, a restart just after a burst. With
// Size.PastWindow a third start waits until the log is older than the
// window (filled is when the fill ended), as a data dir is restarted
// that was not written in the last minutes.
func (s stage) restarts(ctx context.Context, dir string, count int, filled time.Time) ([]Row, error) {
	start := func() (time.Duration, error) {
		gw := gateway.New(gateway.Config{
			Version: s.Version,
			Host:    "bench", NATS: embeddednats.Config{DataDir: dir, ServerName: "bench", SyncAlways: s.Sync},
			HTTP: "127.0.0.1:0", NoHerdr: true, Heartbeat: 5 * time.Second, Logger: s.Logger,
		})
		began := time.Now()
		if err := gw.Start(ctx); err != nil {
			return 0, fmt.Errorf("restart: %w", err)
		}
		took := time.Since(began)
		return took, gw.Close()
	}
	// The embedded server alone on the same store: what of a restart is
	// NATS's own recovery, not fleetd's.
	alone := func() (time.Duration, error) {
		began := time.Now()
		n, err := StartNATS(ctx, dir, s.Sync)
		if err != nil {
			return 0, err
		}
		took := time.Since(began)
		n.Close()
		s.progress("NATS alone started on the store in %s", took.Round(time.Millisecond))
		return took, nil
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	// restart times NATS alone on the store, then a gateway's restart,
	// as the row called name.
	restart := func(name, note string) (Row, error) {
		bare, err := alone()
		if err != nil {
			return Row{}, err
		}
		took, err := start()
		if err != nil {
			return Row{}, err
		}
		s.progress("%s: %s", name, took.Round(time.Millisecond))
		r := Row{Name: name, N: count, Unit: UnitMs, P50: ms(took), Base: ms(bare), BaseName: "NATS alone", Target: "≤ 2s", Note: note}
		r.Delta()
		r.Check(took <= 2*time.Second)
		return r, nil
	}
	cold, err := start()
	if err != nil {
		return nil, err
	}
	s.progress("first start on %d events in %s", count, cold.Round(time.Millisecond))
	warm, err := restart("restart: fleetd up ready on the log, from its checkpoint",
		fmt.Sprintf("a gateway (no herdr) stopped and started again on %d events: NATS, provisioning, the views restored and current. The baseline is the embedded server started alone on the store: nats-server rebuilds its dedupe map from every message of the last %s (the stream's duplicates window), here the whole log, just written", count, events.DefaultDuplicates))
	if err != nil {
		return nil, err
	}
	first := Row{Name: "restart: first start on the log (views folded from scratch)", N: count, Unit: UnitMs, P50: ms(cold), Status: StatusNone}
	rows := []Row{warm, first}
	if !s.Size.PastWindow {
		return rows, nil
	}
	// A second past the window's end: the server's clock and ours are one.
	past := filled.Add(events.DefaultDuplicates + time.Second)
	s.progress("waiting %s for the log to be older than the %s dedupe window", time.Until(past).Round(time.Second), events.DefaultDuplicates)
	select {
	case <-time.After(time.Until(past)):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	steady, err := restart("restart: fleetd up from its checkpoint, the log older than the dedupe window",
		fmt.Sprintf("the same restart once the last event is %s old, so nats-server has no dedupe map to reload: a data dir restarted after the fleet's last minutes wrote no burst", events.DefaultDuplicates))
	if err != nil {
		return nil, err
	}
	return append(rows, steady), nil
}

// benchGateway starts a gateway with no herdr on a fresh store: the log,
// the projections and the lead shim, as `fleetd up --no-herdr` runs them.
func (s stage) benchGateway(ctx context.Context) (*gateway.Gateway, error) {
	gw := gateway.New(gateway.Config{
		Version: s.Version,
		Host:    "bench", NATS: embeddednats.Config{DataDir: filepath.Join(s.dir, "gw"), ServerName: "bench", SyncAlways: s.Sync},
		HTTP: "127.0.0.1:0", NoHerdr: true, Heartbeat: 5 * time.Second, Logger: s.Logger,
	})
	if err := gw.Start(ctx); err != nil {
		return nil, err
	}
	return gw, nil
}

// scale: a fleet of agents over simulated hosts (registered and status
// events, no panes) in a running gateway; roster queries in-process and
// over HTTP; the gateway process's resident memory.
func (s stage) scale(ctx context.Context) ([]Row, error) {
	gw, err := s.benchGateway(ctx)
	if err != nil {
		return nil, err
	}
	defer gw.Close()
	f := NewFleet(s.Size.Hosts, s.Size.Agents)
	last, err := Publish(ctx, gw.JetStream(), f.Announce())
	if err != nil {
		return nil, err
	}
	if err := waitSeq(ctx, gw.Views, last); err != nil {
		return nil, err
	}
	if got := len(gw.Views.Roster()); got < len(f.Agents) {
		return nil, fmt.Errorf("scale: roster has %d agents, want %d", got, len(f.Agents))
	}
	views, err := Time(s.Size.Queries, func() error {
		if r := gw.Views.Roster(); len(r) < len(f.Agents) {
			return fmt.Errorf("scale: roster has %d agents", len(r))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The first call after each change: the views share a roster's rows
	// until they change, so the calls above, with nothing changing, each
	// got the same rows.
	var fresh Sample
	for i := range max(s.Size.Queries/4, 1) {
		a := f.Agents[i%len(f.Agents)]
		st := events.StatusWorking
		if i%2 == 1 {
			st = events.StatusIdle
		}
		seq, err := Publish(ctx, gw.JetStream(), []events.Event{{Subject: a, Data: events.AgentStatusChanged{Status: st, Source: "herdr", Pane: "p-" + a}}})
		if err != nil {
			return nil, err
		}
		if err := waitSeq(ctx, gw.Views, seq); err != nil {
			return nil, err
		}
		start := time.Now()
		r := gw.Views.Roster()
		fresh = append(fresh, time.Since(start))
		if len(r) < len(f.Agents) {
			return nil, fmt.Errorf("scale: roster has %d agents", len(r))
		}
	}
	hc := &http.Client{}
	url := "http://" + gw.HTTPAddr() + "/roster"
	get := func() error {
		resp, err := hc.Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /roster: %s", resp.Status)
		}
		return nil
	}
	if err := get(); err != nil { // open the keep-alive connection
		return nil, err
	}
	httpS, err := Time(s.Size.Queries, get)
	if err != nil {
		return nil, err
	}
	rss := RSS(os.Getpid())
	// After the memory reading: the folds of the past it caches are the
	// dashboard's, not the gateway's steady state.
	dash, err := s.dashboardRows(ctx, gw, f, hc)
	if err != nil {
		return nil, err
	}
	label := fmt.Sprintf("%d agents / %d hosts", len(f.Agents), len(f.Hosts))
	rows := []Row{
		{Name: "roster: GET /roster, " + label, N: len(httpS), Unit: UnitMs, P50: Ms(httpS.P50()), P99: Ms(httpS.P99()),
			Target: "≤ 2ms p99", Note: "over HTTP on loopback, keep-alive, the whole roster as JSON"},
		{Name: "roster: Views.Roster, " + label, N: len(views), Unit: UnitMs, P50: Ms(views.P50()), P99: Ms(views.P99()),
			Target: "≤ 2ms p99", Note: "in-process, the views unchanged between calls: each returns the rows shared since the last change"},
		{Name: "roster: Views.Roster after a change, " + label, N: len(fresh), Unit: UnitMs, P50: Ms(fresh.P50()), P99: Ms(fresh.P99()),
			Target: "≤ 2ms p99", Note: "the first call after an agent's status changed: a new row for that agent, the others shared with the version before"},
		{Name: "memory: gateway RSS, " + label, N: 1, Unit: UnitMB, P50: rss, Target: "≤ 150 MB",
			Note: "VmRSS of the gateway process (embedded NATS, projections, shim) after the roster queries"},
	}
	rows[0].Check(rows[0].P99 <= 2)
	rows[1].Check(rows[1].P99 <= 2)
	rows[2].Check(rows[2].P99 <= 2)
	rows[3].Check(rss <= 150)
	return append(rows, dash...), nil
}

// dashboardRows time the dashboard's fleet view at the scale stage's
// size, a quarter of the agents with a turn in flight: the server's time
// to build and render it (GET /ui/view, the fragment a live stream sends;
// over loopback HTTP), and the same view as of a point of the past, each
// point a fresh fold of the log up to it (time travel, uncached).
func (s stage) dashboardRows(ctx context.Context, gw *gateway.Gateway, f Fleet, hc *http.Client) ([]Row, error) {
	newID := events.NewULIDSource(time.Now)
	var evs []events.Event
	for i, a := range f.Agents {
		if i%4 == 0 {
			evs = append(evs, Turn(a, newID(), i)[:2]...) // queued, typed: in flight
		}
	}
	last, err := Publish(ctx, gw.JetStream(), evs)
	if err != nil {
		return nil, err
	}
	if err := waitSeq(ctx, gw.Views, last); err != nil {
		return nil, err
	}
	base := "http://" + gw.HTTPAddr() + "/ui/view?view=fleet"
	var size int
	get := func(url string) func() error {
		return func() error {
			resp, err := hc.Get(url)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			n, err := io.Copy(io.Discard, resp.Body)
			if err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("GET %s: %s", url, resp.Status)
			}
			size = int(n)
			return nil
		}
	}
	if err := get(base)(); err != nil {
		return nil, err
	}
	live, err := Time(max(10, s.Size.Queries/5), get(base))
	if err != nil {
		return nil, err
	}
	if size < len(f.Agents)*100 {
		return nil, fmt.Errorf("dashboard: the fleet view is %d bytes for %d agents", size, len(f.Agents))
	}
	// Each point is another sequence: a fold of its own, never a cached one.
	var past Sample
	for i := range 5 {
		d, err := Time(1, get(fmt.Sprintf("%s&at=%%23%d", base, last-uint64(i))))
		if err != nil {
			return nil, err
		}
		past = append(past, d...)
	}
	label := fmt.Sprintf("%d agents / %d hosts", len(f.Agents), len(f.Hosts))
	rows := []Row{
		{Name: "dashboard: fleet view, " + label, N: len(live), Unit: UnitMs, P50: Ms(live.P50()), P99: Ms(live.P99()),
			Target: "≤ 300ms p99", Note: fmt.Sprintf("GET /ui/view?view=fleet over loopback HTTP: build and render the whole view (%d KiB), what a live stream sends at most every 250 ms (1 s above 256 KiB); %d agents with a turn in flight", size>>10, len(evs)/2)},
		{Name: "dashboard: fleet view as of a point, " + label, N: len(past), Unit: UnitMs, P50: Ms(past.P50()), P99: Ms(past.P99()),
			Status: StatusNone, Note: fmt.Sprintf("the same with ?at=#seq: a fresh memory fold of the log up to the point (%d events), then the render", last)},
	}
	rows[0].Check(rows[0].P99 <= 300)
	return rows, nil
}

// turns: finished turns driven through the log (queued, typed, submitted,
// replied appended by a driver) into a running gateway whose projections
// fold them; memory after TurnsLow and after TurnsHigh turns.
func (s stage) turns(ctx context.Context) ([]Row, error) {
	name := fmt.Sprintf("memory: heap after %dk turns vs %dk (fleetd's)", s.Size.TurnsHigh/1000, s.Size.TurnsLow/1000)
	if s.Size.TurnsLow < 1000 {
		name = fmt.Sprintf("memory: heap after %d turns vs %d (fleetd's)", s.Size.TurnsHigh, s.Size.TurnsLow)
	}
	if s.Sync && s.Size.Name != "tiny" {
		return []Row{{Name: name, N: s.Size.TurnsHigh, Unit: UnitMB, Status: StatusSkip,
			Note: fmt.Sprintf("%d fsync'd appends take ~10 min on this disk (SyncAlways fsyncs each; see the append rows); the fold's memory does not depend on it", s.Size.TurnsHigh*EventsPerSyntheticTurn)}}, nil
	}
	gw, err := s.benchGateway(ctx)
	if err != nil {
		return nil, err
	}
	defer gw.Close()
	f := NewFleet(s.Size.Hosts, 100)
	if _, err := Publish(ctx, gw.JetStream(), f.Announce()); err != nil {
		return nil, err
	}
	newID := events.NewULIDSource(time.Now)
	drive := func(from, to int) (Memory, error) {
		start := time.Now()
		seq, err := DriveTurns(ctx, gw.JetStream(), f, from, to-from, newID)
		if err != nil {
			return Memory{}, err
		}
		if err := waitSeq(ctx, gw.Views, seq); err != nil {
			return Memory{}, err
		}
		m := MemoryNow()
		s.progress("%d turns folded (to seq %d) in %s: heap %.1f MB (nats-server %.1f, rest %.1f), RSS %.1f MB", to, seq,
			time.Since(start).Round(time.Millisecond), m.HeapMB, m.NATSMB, m.OwnMB, m.RSSMB)
		return m, nil
	}
	low, err := drive(0, s.Size.TurnsLow)
	if err != nil {
		return nil, err
	}
	high, err := drive(s.Size.TurnsLow, s.Size.TurnsHigh)
	if err != nil {
		return nil, err
	}
	// The fold must have ended every turn it was given.
	replied := lo.CountBy(gw.Views.Roster(), func(a *projections.Agent) bool { return a.Open() == 0 })
	if replied < len(f.Agents) {
		return nil, fmt.Errorf("turns: %d of %d agents still have a turn open", len(f.Agents)-replied, len(f.Agents))
	}
	own := Row{Name: name, N: s.Size.TurnsHigh, Unit: UnitMB, P50: high.OwnMB, Base: low.OwnMB,
		BaseName: fmt.Sprintf("after %d", s.Size.TurnsLow), Target: "≤ 1.20×",
		Note: "the gateway's Go heap outside the embedded nats-server (projections, turn cache, shim), after GC, estimated from the runtime's heap profile; 100 agents"}
	own.Check(own.Ratio() <= 1.2)
	all := Row{Name: strings.Replace(strings.TrimSuffix(name, " (fleetd's)"), "memory: heap", "memory: whole heap", 1), N: s.Size.TurnsHigh, Unit: UnitMB,
		P50: high.HeapMB, Base: low.HeapMB, BaseName: fmt.Sprintf("after %d", s.Size.TurnsLow), Status: StatusNone,
		Note: fmt.Sprintf("the whole process heap, the embedded nats-server's share %.0f → %.0f MB (its block caches and the 2-minute dedupe window of every event id); RSS %.0f → %.0f MB",
			low.NATSMB, high.NATSMB, low.RSSMB, high.RSSMB)}
	all.Ratio()
	return []Row{own, all}, nil
}

// waitSeq waits (bounded) for the projections to fold up to seq.
func waitSeq(ctx context.Context, v projections.Views, seq uint64) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := v.WaitSeq(ctx, seq); err != nil {
		return fmt.Errorf("projections did not reach seq %d (at %d): %w", seq, v.Applied(), err)
	}
	return nil
}
