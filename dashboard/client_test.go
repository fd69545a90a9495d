package dashboard_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/fleetd/fleetd/dashboard"
)

// getter records the requests an API makes.
type getter struct{ paths []string }

func (g *getter) Do(_ context.Context, method, path string, _, _ any) error {
	if method != http.MethodGet {
		return errors.New("not a GET")
	}
	g.paths = append(g.paths, path)
	return nil
}

// The API asks for the routes the server serves, with the point and the
// window as their query takes them.
func TestAPIAsksForTheServersRoutes(t *testing.T) {
	var g getter
	api := dashboard.API{Get: &g}
	ctx := context.Background()
	at := dashboard.Point{Seq: 42}
	_, _ = api.RosterAt(ctx, at)
	_, _ = api.Timeline(ctx, "01T/x")
	_, _ = api.Cost(ctx, "role", "24h", at)
	_, _ = api.Cost(ctx, "agent", "all", dashboard.Point{})
	want := []string{"/ui/api/roster?at=%2342", "/ui/api/turns/01T%2Fx", "/ui/api/cost?at=%2342&by=role&since=24h", "/ui/api/cost?by=agent&since=all"}
	if len(g.paths) != len(want) {
		t.Fatalf("paths %q, want %q", g.paths, want)
	}
	for i := range want {
		if g.paths[i] != want[i] {
			t.Errorf("request %d: %q, want %q", i, g.paths[i], want[i])
		}
	}
}

func TestSinceParamReadsATimeHereAndPassesTheRestOn(t *testing.T) {
	loc := time.FixedZone("here", 2*3600)
	now := time.Date(2026, 11, 30, 15, 0, 0, 0, loc)
	for since, want := range map[string]string{"24h": "24h", "all": "all", "7d": "7d", "14:02": "2026-11-30T12:02:00Z"} {
		if got, err := dashboard.SinceParam(since, now); err != nil || got != want {
			t.Errorf("SinceParam(%q) = %q, %v, want %q", since, got, err, want)
		}
	}
	for _, bad := range []string{"25:99", "live:"} {
		if _, err := dashboard.SinceParam(bad, now); !errors.Is(err, dashboard.ErrBadPoint) {
			t.Errorf("SinceParam(%q) = %v, want ErrBadPoint", bad, err)
		}
	}
}
