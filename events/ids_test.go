package events_test

import (
	"testing"

	"github.com/oklog/ulid/v2"

	"github.com/fleetd/fleetd/events"
)

// A derived id is the same for the same step and time, differs by step,
// and carries the time it was given (a parent ULID's, or 0).
func TestDerivedIDsAreFixedByTheirStep(t *testing.T) {
	parent := "01JF6Z8K3Q4V5W6X7Y8Z9A0B1C"
	a, b := events.DerivedIDFrom(parent, "fleetd/x/"+parent), events.DerivedIDFrom(parent, "fleetd/y/"+parent)
	if a != events.DerivedIDFrom(parent, "fleetd/x/"+parent) {
		t.Error("one step, two ids")
	}
	if a == b || a == parent {
		t.Error("an id shared by two steps, or with the parent")
	}
	if got, want := ulid.MustParse(a).Time(), ulid.MustParse(parent).Time(); got != want {
		t.Errorf("time %d, want the parent's %d", got, want)
	}
	if got := ulid.MustParse(events.DerivedIDFrom("not-a-ulid", "k")).Time(); got != 0 {
		t.Errorf("time of an id from a non-ULID parent: %d, want 0", got)
	}
	if got, want := ulid.MustParse(events.DerivedID(1_764_000_000_000, "k")).Time(), uint64(1_764_000_000_000); got != want {
		t.Errorf("time %d, want %d", got, want)
	}
}
