package recording

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Recording is one scenario of one kind's CLI, as fleetd saw and drove it.
type Recording struct {
	// Kind is the kind's name ("claude"); Scenario the scenario's
	// ("one-line-turn").
	Kind     string `json:"kind"`
	Scenario string `json:"scenario"`
	// Versions are what ran: the CLI's own --version, the runtime's.
	Versions Versions `json:"versions"`
	// Screens are the distinct screens read, scrubbed; a read step names
	// one by index.
	Screens []string `json:"screens"`
	// Steps are what happened, in time order.
	Steps []Step `json:"steps"`
	// Decisions are what Replay said of the steps when the recording was
	// made: what a replay must say again.
	Decisions []string `json:"decisions"`
}

// Versions are the versions a recording was made with.
type Versions struct {
	CLI     string `json:"cli"`
	Runtime string `json:"runtime"`
}

// Step ops.
const (
	// OpRead: the bridge read the pane's visible screen (Screen).
	OpRead = "read"
	// OpInput: pane.send_input of Text (and Keys).
	OpInput = "input"
	// OpKeys: pane.send_keys of Keys.
	OpKeys = "keys"
	// OpPrompt: agent.prompt of Text.
	OpPrompt = "prompt"
	// OpReport: pane.report_agent (a hook reporting the agent's State to
	// herdr).
	OpReport = "report"
	// OpHerdr: an event of herdr's subscriptions (Event, State).
	OpHerdr = "herdr"
	// OpLog: an event on fleetd's log about the agent (Event is its type,
	// Turn its turn, Data its payload).
	OpLog = "log"
	// OpNote: something the scenario did itself (Text), as a person
	// would: open a dialog, kill the process.
	OpNote = "note"
	// OpBefore: at time 0, one of the agent's statuses as the bridge had
	// been told it before the recording began (Before; Event says which,
	// BeforeHerdr…). A recording made before there were any tells none:
	// its replay takes each status it does not tell both ways.
	OpBefore = "before"
)

// Step is one thing that happened.
type Step struct {
	// At is milliseconds since the recording began.
	At   int64  `json:"at"`
	Op   string `json:"op"`
	Pane string `json:"pane,omitempty"`
	// Screen indexes Recording.Screens (OpRead).
	Screen int      `json:"screen,omitempty"`
	Text   string   `json:"text,omitempty"`
	Keys   []string `json:"keys,omitempty"`
	Event  string   `json:"event,omitempty"`
	State  string   `json:"state,omitempty"`
	Turn   string   `json:"turn,omitempty"`
	// Data is an OpLog event's payload, scrubbed.
	Data map[string]any `json:"data,omitempty"`
}

// Path is where a recording lives under dir: <kind>/<cli version>/<scenario>.json.gz.
func Path(dir, kind, cliVersion, scenario string) string {
	return filepath.Join(dir, kind, safeName(cliVersion), scenario+".json.gz")
}

// safeName keeps a version string usable as a directory name.
func safeName(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "unknown"
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '-', r == '_':
			return r
		}
		return '_'
	}, s)
}

// Save writes r to path as gzipped, indented JSON (indented so that
// `zcat` reads it).
func Save(path string, r *Recording) error {
	raw, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	if _, err := zw.Write(append(raw, '\n')); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// Load reads a recording Save wrote.
func Load(path string) (*Recording, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var r Recording
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// All lists the recordings under dir (every *.json.gz), sorted.
func All(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".json.gz") {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}
