package natstest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A port one test reserved is not another's until that test ends, and
// FreePorts hands out reserved, distinct ports that the kernel never hands
// out by itself.
func TestAReservedPortIsPassedOverUntilItsTestEnds(t *testing.T) {
	dir := t.TempDir()
	t.Run("holder", func(t *testing.T) {
		if !reserve(t, dir, 1) {
			t.Fatal("a free port was not reserved")
		}
		if reserve(t, dir, 1) {
			t.Fatal("a reserved port was reserved again")
		}
	})
	if !reserve(t, dir, 1) {
		t.Fatal("the port stayed reserved after its test ended")
	}

	ports := FreePorts(t, 8)
	if len(slices.Compact(slices.Sorted(slices.Values(ports)))) != 8 {
		t.Fatalf("ports not distinct: %v", ports)
	}
	lo, hi := fixedPortRange()
	for _, p := range ports {
		if reserve(t, filepath.Join(os.TempDir(), "fleetd-test-ports"), p) {
			t.Fatalf("port %d handed out unreserved", p)
		}
		// The kernel hands out ports of its ephemeral range by itself (a
		// listener on port 0, an outgoing connection): one there could be
		// taken between the reservation and the bind.
		if p < lo || p >= hi {
			t.Errorf("port %d is outside [%d, %d), below the ephemeral range", p, lo, hi)
		}
	}
}
