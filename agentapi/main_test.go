package agentapi_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as a tiny terminal agent (fakeAgent) that
// agentapi runs: FAKE_AGENT=1 makes it one.
func TestMain(m *testing.M) {
	if os.Getenv("FAKE_AGENT") == "1" {
		fakeAgent()
		return
	}
	os.Exit(m.Run())
}

// requireAgentapi returns the agentapi binary on PATH, or skips the test
// saying how to build it; under CI=true or FLEET_REQUIRE_AGENTAPI=1 a
// missing agentapi fails it instead.
func requireAgentapi(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("agentapi")
	if err == nil {
		return bin
	}
	msg := "agentapi not on PATH: run `export PATH=\"$(.ci/install-agentapi.sh):$PATH\"` at the repository root to build it from ../shared/vendor"
	if os.Getenv("CI") == "true" || os.Getenv("FLEET_REQUIRE_AGENTAPI") == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// fakeAgent is a line-based stand-in for a coding agent's TUI: it draws a
// prompt box agentapi's generic detector recognises (a ">" row between
// rules), and answers each line typed into it (the terminal is in
// canonical mode, so Enter ends a line; agentapi's "x", Backspace and
// bracketed-paste markers arrive as bytes and are stripped):
//
//	exit N   exits with status N
//	busy D   prints a tick every 100 ms for D, then answers
//	else     answers "ECHO: <line>"
func fakeAgent() {
	box := func() {
		fmt.Print("────────────────────────────────\n> \n────────────────────────────────\n")
	}
	fmt.Println("fake agent ready")
	box()
	in := bufio.NewReader(os.Stdin)
	for {
		line, err := in.ReadString('\n')
		if err != nil {
			os.Exit(0)
		}
		for _, junk := range []string{"x\b", "\x1b[200~", "\x1b[201~", "\r", "\n"} {
			line = strings.ReplaceAll(line, junk, "")
		}
		switch cmd, arg, _ := strings.Cut(line, " "); cmd {
		case "exit":
			n, _ := strconv.Atoi(arg)
			os.Exit(n)
		case "busy":
			d, _ := time.ParseDuration(arg)
			for end := time.Now().Add(d); time.Now().Before(end); {
				fmt.Printf("working %s\n", time.Now().Format("15:04:05.000"))
				time.Sleep(100 * time.Millisecond)
			}
		}
		fmt.Printf("ECHO: %s\n", line)
		box()
	}
}
