// Command dashshot takes the README's picture of the dashboard: it runs
// `fleetd demo --keep`, opens the dashboard the demo prints in a headless
// Chromium, waits until the fleet is visibly at work (agents working, some
// cost already recorded) and saves the viewport as a PNG.
//
//	go run ./cmd/dashshot -o docs/dashboard.png
//
// It drives the real binary rather than a fabric in-process so the picture
// is of `fleetd demo` exactly as a user runs it. It imports no fleetd
// package; Chromium is found as the browser tests find it ($FLEET_CHROMIUM,
// else chromium or Chrome on PATH).
package main
