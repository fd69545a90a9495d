package claudehook

import (
	"context"
	"strings"
	"testing"
)

// BenchmarkHook is one `fleetd hook stop` in-process, end to end: parse the
// payload, read the transcript tail, dial NATS over TCP, look up the
// roster, replay an empty spool, append two events.
func BenchmarkHook(b *testing.B) {
	f := startFleet(b)
	env := paneEnv(f.url, b.TempDir())
	ctx := context.Background()
	for b.Loop() {
		if err := Run(ctx, "stop", strings.NewReader(payloads[Stop]), env, Options{NoHerdr: true}); err != nil {
			b.Fatal(err)
		}
	}
}
