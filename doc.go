// Package fleetd is the root of the fleetd module. It holds no code of its
// own, only the architecture test that keeps the import direction of
// DESIGN.md from eroding: events and embeddednats import no fleetd package,
// nothing imports cmd, every package stays inside its allow-list, and the
// fleetd binary links no `testing`.
package fleetd
