package simagent_test

import (
	"os"
	"testing"

	"github.com/fleetd/fleetd/internal/fleettest"
)

// fleetd is the fleetd binary built once for this package's tests: the
// simulated agent runs as `fleetd sim-agent` and fires `fleetd hook`.
var fleetd string

func TestMain(m *testing.M) { os.Exit(fleettest.RunWithFleetd(m, "../cmd/fleetd", &fleetd)) }
