package gateway

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/fleetd/fleetd/events"
)

// ErrNoOwner means no running gateway drives the herdr a command is about
// to open a pane in: an agent spawned there would belong to no host, show
// idle forever and swallow role turns.
var ErrNoOwner = errors.New("no running fleetd up drives this herdr")

// Owner finds the host whose gateway drives the herdr at socket on this
// machine, from the hosts' recent announcements (host.up and heartbeats
// within ttl of now, not followed by host.down). `fleetd spawn` without
// --host takes it, so the agent lands on the host that owns its pane
// rather than on one named after the machine that no gateway serves.
func Owner(ctx context.Context, log events.Log, machine, socket string, ttl time.Duration, now time.Time) (string, error) {
	socket = cleanPath(socket)
	type seen struct {
		up   events.HostUp
		at   time.Time
		down bool
	}
	hosts := map[string]*seen{}
	q := events.Query{Subjects: []string{"fleet.host.*.up", "fleet.host.*.down"}, Since: now.Add(-ttl)}
	for ev, err := range log.Read(ctx, q) {
		if err != nil {
			return "", fmt.Errorf("read the hosts' announcements: %w", err)
		}
		switch d := ev.Data.(type) {
		case events.HostUp:
			hosts[d.Host] = &seen{up: d, at: ev.Time}
		case events.HostDown:
			if h, ok := hosts[d.Host]; ok {
				h.down = true
			}
		}
	}
	var owners, others []string
	for name, h := range hosts {
		switch {
		case h.down:
		case h.up.Machine == machine && h.up.Herdr != "" && cleanPath(h.up.Herdr) == socket:
			owners = append(owners, name)
		default:
			others = append(others, fmt.Sprintf("%s (machine %s, herdr %s)", name, orNone(h.up.Machine), orNone(h.up.Herdr)))
		}
	}
	slices.Sort(owners)
	slices.Sort(others)
	switch len(owners) {
	case 1:
		return owners[0], nil
	case 0:
		heard := "none heard in the last " + ttl.String()
		if len(others) > 0 {
			heard = "heard from " + strings.Join(others, ", ")
		}
		return "", fmt.Errorf("%w at %s on %s (%s): start 'fleetd up' here, or name its host with --host", ErrNoOwner, socket, machine, heard)
	default:
		return "", fmt.Errorf("hosts %s all drive the herdr at %s on %s: name one with --host", strings.Join(owners, ", "), socket, machine)
	}
}

func cleanPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
