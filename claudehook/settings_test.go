package claudehook

import (
	"encoding/json"
	"os"
	"path/filepath"
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
	if cmd := got.Hooks["Stop"][0].Hooks[0].Command; cmd != "/usr/local/bin/fleetd hook stop" {
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
