package herdrbridge

import (
	"regexp"
	"sync"
)

// packageRegexps are the package's regexps. Every hook run of fleetd
// initialises this package and uses none of them: they are compiled once,
// on first use, behind one sync.OnceValue (each OnceValue made at start
// costs the hook's start allocations; TestTheHookStartsWithoutFleetdPackagesDoingWork).
type packageRegexps struct {
	openCodeDialog      *regexp.Regexp
	openCodePlaceholder *regexp.Regexp
	piFooter            *regexp.Regexp
	piSelectorCount     *regexp.Regexp
	commandLike         *regexp.Regexp
	sandboxExitRE       *regexp.Regexp
	shellSafe           *regexp.Regexp
}

var regexps = sync.OnceValue(func() *packageRegexps {
	return &packageRegexps{
		openCodeDialog:      regexp.MustCompile(`\S {3,}esc$`),
		openCodePlaceholder: regexp.MustCompile(`^(Ask anything|Run a command)… ".*"$`),
		piFooter:            regexp.MustCompile(`(\d+(\.\d+)?%|\?)/\d`),
		piSelectorCount:     regexp.MustCompile(`^\s+\(\d+/\d+\)\s*$`),
		commandLike:         regexp.MustCompile(`^/[A-Za-z0-9:_-]*(\s|$)`),
		sandboxExitRE:       regexp.MustCompile(`\[fleetd\] the sandbox exited with status (\d+)`),
		shellSafe:           regexp.MustCompile(`^[A-Za-z0-9_@%+=:,./-]+$`),
	}
})
