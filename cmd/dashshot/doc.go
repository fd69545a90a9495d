// Command dashshot takes the README's picture of the dashboard: it runs
// `fleetd demo --keep`, opens the dashboard the demo prints in a headless
// Chromium, waits until the fleet is visibly at work (agents working, some
// cost already recorded) and saves the viewport as a PNG.
//
//	go run ./cmd/dashshot -o docs/dashboard.png
//
// With -dialog it also takes the picture of a permission prompt answered
// from the dashboard: one of the demo's agents is sent a turn that stops
// on its permission dialog, its agent view (the dialog's options, the
// agent's screen) is captured, and option 1 is clicked — the picture is
// kept only if the dialog then went.
//
//	go run ./cmd/dashshot -o docs/dashboard.png -dialog docs/dashboard-dialog.png
//
// It drives the real binary rather than a fabric in-process so the picture
// is of `fleetd demo` exactly as a user runs it. It imports no fleetd
// package; Chromium is found as the browser tests find it ($FLEET_CHROMIUM,
// else chromium or Chrome on PATH).
package main
