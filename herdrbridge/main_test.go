package herdrbridge_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/fleetd/fleetd/simagent"
)

// simAgentEnv, set in a pane's environment to a paste lag, makes this test
// binary the simulated Claude Code (simagent, without hooks) in that
// pane, so a test can type into the sim's composer through the fake herdr.
const simAgentEnv = "FLEET_TEST_SIM_PASTE_LAG"

func TestMain(m *testing.M) {
	if lag := os.Getenv(simAgentEnv); lag != "" {
		os.Exit(runSimAgent(lag))
	}
	os.Exit(m.Run())
}

func runSimAgent(lag string) int {
	d, err := time.ParseDuration(lag)
	if err == nil {
		err = simagent.RunOnTerminal(context.Background(), simagent.Config{NoHooks: true, Think: 200 * time.Millisecond, PasteLag: d})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "sim agent:", err)
		return 1
	}
	return 0
}
