package demo

import (
	"os/exec"

	"github.com/fleetd/fleetd/fakeapi"
	"github.com/fleetd/fleetd/roles"
)

// RealKinds are the kinds of real agent CLI fleetd drives, in the order
// mixed gives them roles: what `fleetd bench` runs a whole-turn row of
// per installed CLI.
func RealKinds() []string {
	kinds := make([]string, len(agentCLIs))
	for i, c := range agentCLIs {
		kinds[i] = c.kind
	}
	return kinds
}

// CLIOnPath reports whether kind's CLI is on PATH.
func CLIOnPath(kind string) bool {
	c, ok := cliOf(kind)
	if !ok {
		return false
	}
	_, err := exec.LookPath(c.bin)
	return err == nil
}

// CLIName is kind's CLI as people call it ("Claude Code"), and its
// executable's name; both "" for a kind that is no real CLI.
func CLIName(kind string) (name, bin string) {
	c, _ := cliOf(kind)
	return c.name, c.bin
}

// InstallHint says how to put kind's pinned CLI on PATH ("" for a kind
// that is no real CLI).
func InstallHint(kind string) string {
	c, ok := cliOf(kind)
	if !ok {
		return ""
	}
	return c.install()
}

// RealRole is the gateway role the demo gives a real CLI of kind against
// the fake API at apiURL, its agents' HOME home (made by WriteRealHome):
// the bench's whole-turn rows run each kind as the demo does.
func RealRole(kind, apiURL, home string) roles.Role { return realRole(kind, apiURL, home) }

// WriteRealHome makes home the HOME of real CLIs working in work, as the
// demo does: Claude Code's onboarding and trust answered, and, when
// kinds holds OpenCode, its global config directory holding fleetd's
// plugin package (else OpenCode npm-installs it as it starts).
func WriteRealHome(home, work string, kinds []string) error {
	if err := fakeapi.WriteClaudeHome(home, work); err != nil {
		return err
	}
	for _, k := range kinds {
		if k == KindOpenCode {
			return seedOpenCodeGlobalConfig(home)
		}
	}
	return nil
}
