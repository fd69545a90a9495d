package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/doctor"
	"github.com/fleetd/fleetd/herdrbridge/herdrschema"
	"github.com/fleetd/fleetd/herdrbridge/herdrtest"
)

// doctorLine is what a test expects of one check's line: its status and
// words its detail or fix say.
type doctorLine struct {
	status doctor.Status
	says   []string
}

// TestDoctor runs `fleetd doctor` against one healthy fabric (`fleetd up`
// with the built-in herdr) and, case by case, with one thing broken: each
// time the broken thing's line fails (and only it), the exit status is 1,
// and the run takes seconds even with NATS unreachable. The agent CLIs
// are stand-in scripts that only say a version.
func TestDoctor(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// claude at the tested release on PATH; codex at another release
	// off it, and a command of a role that is not its kind's CLI.
	other := filepath.Join(dir, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	writeScript(t, filepath.Join(bin, "claude"), "echo '"+testedVersion(t, "claude")+" (Claude Code)'")
	writeScript(t, filepath.Join(other, "codex"), "echo 'codex-cli 0.1.0'")
	writeScript(t, filepath.Join(bin, "my-agent"), "exit 0")
	rolesFile := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := rolesFile("good.json", `{"roles":{"w-claude":{"cap":2}}}`)
	noCodex := rolesFile("nocodex.json", `{"roles":{"w-claude":{},"w-codex":{"kind":"codex"}}}`)
	otherCodex := rolesFile("othercodex.json", `{"roles":{"w-claude":{},"w-codex":{"kind":"codex","command":["`+filepath.Join(other, "codex")+`"]}}}`)
	custom := rolesFile("custom.json", `{"roles":{"w-claude":{},"w-mine":{"command":["my-agent","--go"]}}}`)
	bad := rolesFile("bad.json", `{"roles":{"w-claude":{"env_class":"gatway"}}}`)

	herdr := herdrtest.Start(t, herdrtest.Config{Validator: herdrschema.Schema(t)})
	dataDir := filepath.Join(dir, "data")
	up := startUp(t, dataDir, "--herdr", herdr.Path(), "--roles", good)
	down := fmt.Sprintf("nats://127.0.0.1:%d", freePort(t))
	// A NATS that takes the connection and never says a word (a hung
	// server, a proxy with nothing behind it): the check gives up at its
	// timeout instead of holding the run.
	mute, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { mute.Close() })
	go func() {
		for {
			c, err := mute.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { c.Close() })
		}
	}()
	hung := "nats://" + mute.Addr().String()

	healthy := map[string]doctorLine{
		"herdr":         {doctor.OK, []string{"protocol 20", herdr.Path()}},
		"roles file":    {doctor.OK, []string{good, "w-claude"}},
		"boundary":      {doctor.OK, nil},
		"role w-claude": {doctor.OK, []string{"Claude Code " + testedVersion(t, "claude"), "tested with"}},
		"nats":          {doctor.OK, []string{up.url, "nats-server"}},
		"stream FLEET":  {doctor.OK, []string{"events", "replica"}},
		"clock":         {doctor.OK, []string{"against NATS", "host testhost"}},
		"shim":          {doctor.OK, []string{up.http, "ok", "NATS connected"}},
		"disk":          {doctor.OK, []string{"free for the store in " + dataDir}},
	}
	with := func(changes map[string]doctorLine) map[string]doctorLine {
		m := map[string]doctorLine{}
		for k, v := range healthy {
			m[k] = v
		}
		for k, v := range changes {
			m[k] = v
		}
		return m
	}
	cases := []struct {
		name string
		// flags replaces the healthy run's flags of the same name.
		flags map[string]string
		code  int
		want  map[string]doctorLine
	}{
		{name: "healthy fabric", code: 0, want: healthy},
		{name: "herdr missing", flags: map[string]string{"--herdr": filepath.Join(dir, "no-herdr.sock")}, code: 1,
			want: with(map[string]doctorLine{"herdr": {doctor.Fail, []string{"no herdr socket at " + filepath.Join(dir, "no-herdr.sock"), "start herdr", "--no-herdr"}}})},
		{name: "no herdr on purpose", flags: map[string]string{"--herdr": filepath.Join(dir, "no-herdr.sock"), "--no-herdr": ""}, code: 0,
			want: with(map[string]doctorLine{"herdr": {doctor.Skip, []string{"--no-herdr"}}})},
		{name: "role command missing", flags: map[string]string{"--roles": noCodex}, code: 1,
			want: with(map[string]doctorLine{
				"roles file": {doctor.OK, []string{"w-claude, w-codex"}},
				"role w-codex": {doctor.Fail, []string{"codex (Codex CLI) not found on PATH",
					"npm install -g @openai/codex@" + testedVersion(t, "codex")}},
			})},
		{name: "role CLI at another release", flags: map[string]string{"--roles": otherCodex}, code: 0,
			want: with(map[string]doctorLine{
				"roles file": {doctor.OK, []string{"w-claude, w-codex"}},
				"role w-codex": {doctor.Warn, []string{"Codex CLI 0.1.0", "tested with " + testedVersion(t, "codex"),
					"npm install -g @openai/codex@" + testedVersion(t, "codex")}},
			})},
		{name: "role command not a kind's CLI", flags: map[string]string{"--roles": custom}, code: 0,
			want: with(map[string]doctorLine{
				"roles file":  {doctor.OK, []string{"w-claude, w-mine"}},
				"role w-mine": {doctor.OK, []string{filepath.Join(bin, "my-agent"), "not the Claude Code CLI itself"}},
			})},
		{name: "bad roles file", flags: map[string]string{"--roles": bad}, code: 1,
			want: with(map[string]doctorLine{
				"roles file":    {doctor.Fail, []string{`env_class "gatway", want clean or gateway`, "fix " + bad}},
				"boundary":      {},
				"role w-claude": {},
				"role commands": {doctor.Skip, []string{"does not load"}},
			})},
		{name: "no roles file", flags: map[string]string{"--roles": ""}, code: 0,
			want: with(map[string]doctorLine{
				"roles file": {doctor.Skip, []string{"built-in roles", "--roles FILE"}},
				"role lead":  {doctor.OK, []string{"Claude Code"}},
			})},
		{name: "NATS down", flags: map[string]string{"--nats": down}, code: 1,
			want: with(map[string]doctorLine{
				"nats":         {doctor.Fail, []string{down, "'fleetd up'", "--nats"}},
				"stream FLEET": {doctor.Skip, []string{"no NATS"}},
				"clock":        {doctor.Skip, []string{"no NATS"}},
			})},
		{name: "NATS hangs", flags: map[string]string{"--nats": hung}, code: 1,
			want: with(map[string]doctorLine{
				"nats":         {doctor.Fail, []string{hung, "nothing answered within 2s"}},
				"stream FLEET": {doctor.Skip, []string{"no NATS"}},
				"clock":        {doctor.Skip, []string{"no NATS"}},
			})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			flags := map[string]string{"--nats": up.url, "--url": up.http, "--herdr": herdr.Path(), "--data-dir": dataDir, "--roles": good, "--timeout": "2s"}
			for k, v := range tc.flags {
				flags[k] = v
			}
			for _, asJSON := range []bool{false, true} {
				got, code, took := runDoctor(t, bin, flags, asJSON)
				if code != tc.code {
					t.Errorf("json=%v: exit status %d, want %d", asJSON, code, tc.code)
				}
				if took > 6*time.Second {
					t.Errorf("json=%v: took %v; each check has 2s, and they run at once", asJSON, took)
				}
				checkDoctorLines(t, got, tc.want)
			}
		})
	}
}

// runDoctor runs `fleetd doctor` with flags ("" is a flag without a
// value) in an environment of its own: PATH is bin and the system's, and
// nothing of the test's (FLEET_*, a provider's key) leaks in. With asJSON
// it reads --json's array; otherwise it parses the text lines (and checks
// they are aligned).
func runDoctor(t *testing.T, bin string, flags map[string]string, asJSON bool) ([]doctor.Result, int, time.Duration) {
	t.Helper()
	args := []string{"doctor"}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range flags {
			if !yield(k) {
				return
			}
		}
	}) {
		switch v := flags[k]; {
		case v == "" && k == "--no-herdr":
			args = append(args, k)
		case v == "":
			// Not given at all: kong makes an empty path the working
			// directory.
		default:
			args = append(args, k+"="+v)
		}
	}
	if asJSON {
		args = append(args, "--json")
	}
	cmd := exec.Command(fleetdBin, args...)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + t.TempDir(), "XDG_CONFIG_HOME=" + t.TempDir()}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if asJSON {
		var rs []doctor.Result
		if err := json.Unmarshal(stdout.Bytes(), &rs); err != nil {
			t.Fatalf("--json: %v\n%s", err, stdout.String())
		}
		return rs, code, took
	}
	if code != 0 && !strings.Contains(stderr.String(), "checks failed") {
		t.Errorf("a failed run says nothing of it on stderr: %q", stderr.String())
	}
	return parseDoctorText(t, stdout.String()), code, took
}

// parseDoctorText reads the text output back: "status  check  detail —
// fix", the check in a column as wide as the longest.
func parseDoctorText(t *testing.T, out string) []doctor.Result {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	col := -1
	var rs []doctor.Result
	for _, l := range lines {
		status, rest, _ := strings.Cut(l, " ")
		rest = strings.TrimLeft(rest, " ")
		start := len(l) - len(rest)
		if start != 6 {
			t.Errorf("the check does not start in column 6: %q", l)
		}
		// The check name ends where two spaces start the detail.
		name, detail, found := strings.Cut(rest, "  ")
		if !found {
			t.Fatalf("no detail column: %q", l)
		}
		detail = strings.TrimLeft(detail, " ")
		if c := len(l) - len(detail); col == -1 {
			col = c
		} else if c != col {
			t.Errorf("the detail column moves (%d, then %d) at %q:\n%s", col, c, l, out)
		}
		detail, fix, _ := strings.Cut(detail, " — ")
		rs = append(rs, doctor.Result{Check: name, Status: doctor.Status(status), Detail: detail, Fix: fix})
	}
	return rs
}

// checkDoctorLines compares the results with want: each wanted check is
// there with its status and words; one wanted with a zero doctorLine is
// not there; and no other check fails. The fleetd line (the binary) is
// left out: the test's build has no fleetd-hook beside it.
func checkDoctorLines(t *testing.T, got []doctor.Result, want map[string]doctorLine) {
	t.Helper()
	byCheck := map[string]doctor.Result{}
	for _, r := range got {
		byCheck[r.Check] = r
		if r.Status == doctor.Fail && want[r.Check].status != doctor.Fail {
			t.Errorf("%s fails: %s — %s", r.Check, r.Detail, r.Fix)
		}
		if strings.Contains(r.Detail, "\n") || strings.Contains(r.Fix, "\n") {
			t.Errorf("%s spans lines: %q", r.Check, r.Detail+r.Fix)
		}
		if r.Status != doctor.OK && r.Fix == "" && r.Status != doctor.Skip {
			t.Errorf("%s is %s but says no fix: %s", r.Check, r.Status, r.Detail)
		}
	}
	if _, ok := byCheck["fleetd"]; !ok {
		t.Errorf("no fleetd line: %v", got)
	}
	for check, w := range want {
		r, ok := byCheck[check]
		switch {
		case w.status == "" && ok:
			t.Errorf("%s is checked, want it left out: %+v", check, r)
		case w.status == "":
		case !ok:
			t.Errorf("no %s line in %+v", check, got)
		case r.Status != w.status:
			t.Errorf("%s: %s, want %s: %s — %s", check, r.Status, w.status, r.Detail, r.Fix)
		default:
			for _, s := range w.says {
				if !strings.Contains(r.Detail+" — "+r.Fix, s) {
					t.Errorf("%s does not say %q: %s — %s", check, s, r.Detail, r.Fix)
				}
			}
		}
	}
}

// testedVersion is the release of kind's CLI fleetd was tested with.
func testedVersion(t *testing.T, kind string) string {
	t.Helper()
	tc, ok := doctor.TestedFor(kind)
	if !ok {
		t.Fatalf("no tested release for %s", kind)
	}
	return tc.Version
}

func writeScript(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}
