package events_test

import (
	"os"
	"testing"

	"github.com/fleetd/fleetd/embeddednats/natstest"
)

// TestMain serves a cluster member when a test started this binary as one
// (natstest.Member), and runs the tests otherwise.
func TestMain(m *testing.M) {
	natstest.ServeMember()
	os.Exit(m.Run())
}
