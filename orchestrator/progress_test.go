package orchestrator_test

import (
	"strings"
	"testing"

	"github.com/fleetd/fleetd/orchestrator"
)

func TestProgressLinesSayWhatHappenedToEachTask(t *testing.T) {
	for _, tc := range []struct {
		p    orchestrator.Progress
		want string
	}{
		{orchestrator.Progress{Task: "api", State: "sent", To: "session:api", Agent: "m-1", Turn: "T1", Items: []string{"k1", "k2"}, Bytes: 42},
			"api          sent       → m-1 (session:api) turn T1, slice [k1 k2] 42B"},
		{orchestrator.Progress{Task: "api", State: "reattached", To: "session:api", Turn: "T1"}, "api          reattached → session:api turn T1"},
		{orchestrator.Progress{Task: "api", State: "replied", Agent: "m-1", Rollup: "done\nall " + strings.Repeat("x", 80)},
			`api          replied    ← m-1 "done all ` + strings.Repeat("x", 50) + `…"`},
		{orchestrator.Progress{Task: "api", State: "failed", Agent: "m-1", Error: "pane_exited"}, "api          FAILED     m-1: pane_exited"},
		{orchestrator.Progress{Job: "J1", State: "done"}, "job J1 done: ok"},
		{orchestrator.Progress{Job: "J1", State: "done", Error: "task api failed"}, "job J1 done: failed: task api failed"},
	} {
		if got := tc.p.String(); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.p.State, got, tc.want)
		}
	}
}
