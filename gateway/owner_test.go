package gateway_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/gateway"
	"github.com/fleetd/fleetd/internal/fleettest"
)

// Owner is how `fleetd spawn` without --host finds the host whose gateway
// drives the herdr it opens a pane in; an agent registered under any
// other host would belong to no gateway.
func TestOwnerIsTheHostDrivingThisHerdr(t *testing.T) {
	ctx := fleettest.Ctx(t)
	_, log := fleettest.StartLog(t, events.Options{Source: "test"})
	announce := func(evs ...events.Event) {
		t.Helper()
		for _, ev := range evs {
			if _, err := log.Append(ctx, ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	up := func(host, machine, herdr string) events.Event {
		return events.Event{Subject: host, Data: events.HostUp{Host: host, Machine: machine, Herdr: herdr, Heartbeat: true}}
	}
	owner := func() (string, error) {
		return gateway.Owner(ctx, log, "m1", "/run/a/herdr.sock", time.Minute, time.Now())
	}

	if _, err := owner(); !errors.Is(err, gateway.ErrNoOwner) || !strings.Contains(err.Error(), "none heard") {
		t.Fatalf("empty log: %v, want ErrNoOwner saying none was heard", err)
	}
	// Another machine with the same (default) socket path, a host of this
	// machine on another herdr and one without herdr own nothing here.
	announce(up("b1", "m2", "/run/a/herdr.sock"), up("c1", "m1", "/run/c/herdr.sock"), up("d1", "m1", ""))
	_, err := owner()
	if !errors.Is(err, gateway.ErrNoOwner) {
		t.Fatalf("no owner among others: %v, want ErrNoOwner", err)
	}
	for _, want := range []string{"b1 (machine m2", "c1 (machine m1, herdr /run/c/herdr.sock)", "--host"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}

	announce(up("a1", "m1", "/run/a/../a/herdr.sock"))
	if host, err := owner(); host != "a1" || err != nil {
		t.Fatalf("owner = %q, %v; want a1", host, err)
	}

	announce(up("a2", "m1", "/run/a/herdr.sock"))
	if _, err := owner(); err == nil || !strings.Contains(err.Error(), "a1, a2") {
		t.Fatalf("two hosts on one herdr: %v, want an error naming both", err)
	}

	// A host that stopped cleanly owns nothing any more.
	announce(events.Event{Subject: "a2", Data: events.HostDown{Host: "a2"}})
	if host, err := owner(); host != "a1" || err != nil {
		t.Fatalf("after a2 went down: owner = %q, %v; want a1", host, err)
	}
}
