package main

import (
	"fmt"
	"runtime/debug"
)

// VersionCmd prints the build's version.
type VersionCmd struct{}

// Run prints version, Go version and the VCS revision when known.
func (VersionCmd) Run() error {
	rev := ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev = " (" + s.Value[:12] + ")"
			}
		}
		fmt.Printf("fleetd %s%s %s\n", version, rev, bi.GoVersion)
		return nil
	}
	fmt.Printf("fleetd %s\n", version)
	return nil
}
