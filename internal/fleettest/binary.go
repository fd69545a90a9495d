package fleettest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RunWithFleetd is the TestMain of tests that run fleetd as a child
// process: it builds the fleetd command (at cmdDir, relative to the test's
// package) into a temporary directory, sets *bin to its path, runs the
// tests and removes the directory. It returns the exit code for os.Exit.
func RunWithFleetd(m *testing.M, cmdDir string, bin *string) int {
	dir, err := os.MkdirTemp("", "fleetd-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	*bin = filepath.Join(dir, "fleetd")
	if out, err := exec.Command("go", "build", "-o", *bin, cmdDir).CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build fleetd: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}
