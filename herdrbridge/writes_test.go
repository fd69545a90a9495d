package herdrbridge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
)

// While the log refuses writes, workers retrying at once make one attempt
// per backoff round, the rounds grow to the bound, and the log says so in
// a line per 30 s instead of a line per failure; the first success says
// it is over.
func TestWriteGateBacksOffAndLogsOncePerWindow(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	now := time.Date(2026, 11, 30, 7, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	g := &writeGate{log: slog.New(slog.NewTextHandler(&buf, nil)), now: clock, poll: 200 * time.Millisecond, max: maxWriteBackoff}
	full := fmt.Errorf("append: %w", events.ErrStoreFull)
	ctx := context.Background()

	var waits []time.Duration
	for round := 0; round < 200; round++ {
		// 50 workers fail in the same round.
		for range 50 {
			g.done(ctx, full)
		}
		g.mu.Lock()
		d := g.until.Sub(g.now())
		g.mu.Unlock()
		waits = append(waits, d)
		advance(d)
	}
	if waits[0] != 200*time.Millisecond || waits[1] != 400*time.Millisecond || waits[len(waits)-1] != maxWriteBackoff {
		t.Errorf("backoff %v … %v, want 200ms, 400ms … %v", waits[:3], waits[len(waits)-1], maxWriteBackoff)
	}
	var elapsed time.Duration
	for _, w := range waits {
		elapsed += w
	}
	lines := strings.Count(buf.String(), "\n")
	if max := int(elapsed/(30*time.Second)) + 2; lines > max {
		t.Errorf("%d log lines for %d refused writes over %v, want at most %d:\n%s", lines, 50*len(waits), elapsed, max, buf.String())
	}
	if !g.troubled() {
		t.Fatal("not troubled while refusing")
	}
	g.done(ctx, fmt.Errorf("append: %w", events.ErrConcurrency))
	if !strings.Contains(buf.String(), "takes writes again") || g.troubled() {
		t.Errorf("a write that reached the log (a conflict) did not end the trouble:\n%s", buf.String())
	}
	if !g.wait(ctx) {
		t.Error("wait after recovery")
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	g.done(canceled, errors.New("context canceled"))
	if g.troubled() {
		t.Error("a write abandoned by its caller counted as refused")
	}
}
