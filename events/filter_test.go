package events_test

import (
	"strings"
	"testing"

	"github.com/fleetd/fleetd/events"
)

func TestValidFilterTakesFleetSubjectsWithWholeTokenWildcards(t *testing.T) {
	for _, ok := range []string{"fleet.>", "fleet.agent.w-1.>", "fleet.*.*.replied", "fleet.job.j1.task"} {
		if err := events.ValidFilter(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "fleet", "other.>", "fleet..x", "fleet.>.x", "fleet.ag*", "fleet.a b", "fleet.a\x7f", "fleet." + strings.Repeat("x", 300)} {
		if err := events.ValidFilter(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
