package simagent_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// fleetd is the fleetd binary built once for this package's tests: the
// simulated agent runs as `fleetd sim-agent` and fires `fleetd hook`.
var fleetd string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "simagent-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fleetd = filepath.Join(dir, "fleetd")
	build := exec.Command("go", "build", "-o", fleetd, "../cmd/fleetd")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build fleetd:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
