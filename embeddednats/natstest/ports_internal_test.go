package natstest

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// A port one test reserved is not another's until that test ends, and
// FreePorts hands out reserved, distinct ports.
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
	for _, p := range ports {
		if reserve(t, filepath.Join(os.TempDir(), "fleetd-test-ports"), p) {
			t.Fatalf("port %d handed out unreserved", p)
		}
	}
}
