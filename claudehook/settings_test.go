package claudehook

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteFileLeavesOnlyAWholePrivateSettingsFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", "claude-settings.json")
	for _, bin := range []string{"/old/fleetd", "/usr/local/bin/fleetd"} {
		if err := (SettingsConfig{Fleetd: bin}).WriteFile(path); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Hooks map[string][]struct {
			Hooks []struct{ Command string }
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("settings are not JSON: %v\n%s", err, b)
	}
	if cmd := got.Hooks["Stop"][0].Hooks[0].Command; cmd != "/usr/local/bin/fleetd hook stop --after-prompt" {
		t.Errorf("Stop hook runs %q, want the last binary written", cmd)
	}
	for p, want := range map[string]os.FileMode{path: 0o600, filepath.Dir(path): 0o700} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v (%v), want %v", p, fi.Mode().Perm(), err, want)
		}
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the temporary file is left behind: %v", err)
	}
	if err := (SettingsConfig{}).WriteFile(path); err == nil {
		t.Error("a config without the fleetd path was written")
	}
}

func TestThisFleetdIsAnAbsolutePath(t *testing.T) {
	got, err := ThisFleetd()
	if err != nil || !filepath.IsAbs(got) {
		t.Errorf("ThisFleetd = %q, %v, want an absolute path", got, err)
	}
}

// With the hook binary beside fleetd, the settings run it, and `fleetd
// hook` when it is not there when the hook runs (a sandbox that binds
// only fleetd, a binary removed since): Claude runs the command with sh.
func TestSettingsRunTheHookBinaryBesideFleetdElseFleetdHook(t *testing.T) {
	dir := t.TempDir()
	fleetd, hook := filepath.Join(dir, "fleetd"), filepath.Join(dir, HookName)
	for path, name := range map[string]string{fleetd: "fleetd", hook: "fleetd-hook"} {
		if err := os.WriteFile(path, []byte("#!/bin/sh\necho "+name+" \"$@\"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if got := HookBeside(fleetd); got != hook {
		t.Fatalf("HookBeside = %q, want %q", got, hook)
	}
	command := func(cfg SettingsConfig) string {
		b, err := cfg.JSON()
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Hooks map[string][]struct {
				Hooks []struct{ Command string } `json:"hooks"`
			} `json:"hooks"`
		}
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		return s.Hooks["StopFailure"][0].Hooks[0].Command
	}
	runs := func(command string) string {
		out, err := exec.Command("sh", "-c", command).Output()
		if err != nil {
			t.Fatalf("sh -c %q: %v", command, err)
		}
		return strings.TrimSpace(string(out))
	}
	cmd := command(SettingsConfig{Fleetd: fleetd})
	if got, want := runs(cmd), "fleetd-hook stop-failure --after-prompt"; got != want {
		t.Errorf("%q ran %q, want %q", cmd, got, want)
	}
	if err := os.Remove(hook); err != nil {
		t.Fatal(err)
	}
	if got, want := runs(cmd), "fleetd hook stop-failure --after-prompt"; got != want {
		t.Errorf("with the hook binary gone, %q ran %q, want %q", cmd, got, want)
	}
	if got, want := command(SettingsConfig{Fleetd: fleetd}), fleetd+" hook stop-failure --after-prompt"; got != want {
		t.Errorf("without a hook binary the command is %q, want %q", got, want)
	}
	if got, want := command(SettingsConfig{Fleetd: fleetd, Hook: "-"}), fleetd+" hook stop-failure --after-prompt"; got != want {
		t.Errorf("with Hook %q the command is %q, want %q", "-", got, want)
	}
}
