package main

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// fleetd up's runtime: what --runtime names, or auto's pick, and why.
func TestUpChoosesItsRuntimeAndSaysWhy(t *testing.T) {
	cfgDir := t.TempDir()
	herdrSock := filepath.Join(cfgDir, "herdr", "herdr.sock")
	if err := os.MkdirAll(filepath.Dir(herdrSock), 0o700); err != nil {
		t.Fatal(err)
	}
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	noSocket := env("XDG_CONFIG_HOME", cfgDir)
	have := func() error { return nil }
	missing := func() error { return errors.New("agentapi not installed") }

	for _, tc := range []struct {
		name, runtime, herdrFlag string
		getenv                   func(string) string
		agentapi                 func() error
		socketFile               bool
		want, why, err           string
	}{
		{name: "herdr named", runtime: "herdr", getenv: noSocket, agentapi: have, want: "herdr", why: "--runtime herdr"},
		{name: "agentapi named", runtime: "agentapi", getenv: noSocket, agentapi: have, want: "agentapi", why: "--runtime agentapi"},
		{name: "agentapi named, missing", runtime: "agentapi", getenv: noSocket, agentapi: missing, err: "--runtime agentapi: agentapi not installed"},
		{name: "agentapi named with --herdr", runtime: "agentapi", herdrFlag: "/x.sock", getenv: noSocket, agentapi: have, err: "give one or the other"},
		{name: "auto: --herdr", runtime: "auto", herdrFlag: "/x.sock", getenv: noSocket, agentapi: have, want: "herdr", why: "--herdr"},
		{name: "auto: HERDR_SOCKET_PATH", runtime: "auto", getenv: env("HERDR_SOCKET_PATH", "/y.sock"), agentapi: have, want: "herdr", why: "HERDR_SOCKET_PATH is set"},
		{name: "auto: herdr's socket exists", runtime: "auto", getenv: noSocket, agentapi: have, socketFile: true, want: "herdr", why: "herdr's socket is at " + herdrSock},
		{name: "auto: no herdr, agentapi", runtime: "auto", getenv: noSocket, agentapi: have, want: "agentapi", why: "no herdr socket at " + herdrSock + ", agentapi on PATH"},
		{name: "auto: neither", runtime: "auto", getenv: noSocket, agentapi: missing, want: "herdr", why: "waiting for herdr"},
		{name: "unknown", runtime: "tmux", getenv: noSocket, agentapi: have, err: `--runtime "tmux": want auto, herdr or agentapi`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.socketFile {
				ln, err := net.Listen("unix", herdrSock)
				if err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
			}
			got, err := chooseRuntime(tc.runtime, tc.herdrFlag, tc.getenv, tc.agentapi)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got.Name != tc.want || !strings.Contains(got.Reason, tc.why) {
				t.Fatalf("%+v, %v; want %s because %q", got, err, tc.want, tc.why)
			}
		})
	}
}

// fleetd up --runtime agentapi without agentapi on PATH fails at once,
// saying how to install it, before it starts anything.
func TestUpWithoutAgentapiSaysHowToInstallIt(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(fleetdBin, "up", "--runtime", "agentapi", "--data-dir", filepath.Join(dir, "data"), "--listen", "", "--http", "127.0.0.1:0")
	cmd.Env = append(os.Environ(), "PATH="+dir, "HOME="+dir, "XDG_CONFIG_HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("fleetd up --runtime agentapi without agentapi succeeded:\n%s", out)
	}
	if s := string(out); !strings.Contains(s, "agentapi not installed") || !strings.Contains(s, "install-agentapi.sh") {
		t.Errorf("output %q: want agentapi not installed and how to install it", s)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "jetstream")); err == nil {
		t.Errorf("the store was made before the runtime was checked")
	}
}
