package proc_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/internal/proc"
)

// A command name may hold spaces and parentheses: the fields after it
// count from its last closing parenthesis.
func TestParseStatCountsFieldsFromTheLastParenthesis(t *testing.T) {
	raw := []byte("4242 (fleetd hook) x) S 17 4242 4242 34816 4300 4194560 100 0 0 0 7 3 20 5 20 0 1 0 98765 0 0\n")
	got, ok := proc.ParseStat(raw)
	want := proc.Stat{PID: 4242, PPID: 17, PGRP: 4242, Session: 4242, TTY: 34816, TPGID: 4300, Comm: "fleetd hook) x", State: 'S', UTime: 7, STime: 3, CUTime: 20, CSTime: 5, Start: 98765}
	if !ok || got != want {
		t.Fatalf("ParseStat = %+v, %v; want %+v", got, ok, want)
	}
	if !got.Alive() {
		t.Error("a sleeping process reads as not alive")
	}
	if z, ok := proc.ParseStat([]byte(strings.Replace(string(raw), ") S ", ") Z ", 1))); !ok || z.Alive() {
		t.Errorf("a zombie: %+v, %v; want it read, and not alive", z, ok)
	}
	if got.CPU() != 100*time.Millisecond || got.Reaped() != 250*time.Millisecond {
		t.Errorf("CPU %s, reaped %s; want 100ms, 250ms", got.CPU(), got.Reaped())
	}
}

// A line that is cut short or garbled is refused, not read as zeros.
func TestParseStatRefusesWhatIsNotAStatLine(t *testing.T) {
	for _, raw := range []string{
		"",
		"4242 fleetd S 17",
		"4242 (bash) S 17 4242 4242 34816 4300", // cut before the CPU times
		"x (bash) S 17 4242 4242 34816 4300 4194560 100 0 0 0 7 3 20 5 20 0 1 0 9",
		"4242 (bash) S 17 4242 4242 34816 4300 4194560 100 0 0 0 -7 3 20 5 20 0 1 0 9",
		"4242 )bash( S 17 4242 4242 34816 4300 4194560 100 0 0 0 7 3 20 5 20 0 1 0 9",
	} {
		if got, ok := proc.ParseStat([]byte(raw)); ok {
			t.Errorf("ParseStat(%q) = %+v, ok", raw, got)
		}
	}
}

// This process's own stat: its pid, its parent, and a start time; a
// process that is not there reads as not ok.
func TestReadStatReadsThisProcess(t *testing.T) {
	st, ok := proc.ReadStat(filepath.Join("/proc", strconv.Itoa(os.Getpid())))
	if !ok || st.PID != os.Getpid() || st.PPID != os.Getppid() || st.Start == 0 || st.Comm == "" {
		t.Errorf("ReadStat(self) = %+v, %v; want pid %d, parent %d, a start time and a name", st, ok, os.Getpid(), os.Getppid())
	}
	if _, ok := proc.ReadStat(t.TempDir()); ok {
		t.Error("a directory without a stat file read as ok")
	}
}

// ReadFile reads a whole file whatever the buffer it is given, and hands
// back the grown buffer for the next read.
func TestReadFileReadsPastItsBuffer(t *testing.T) {
	path := filepath.Join(t.TempDir(), "environ")
	want := strings.Repeat("K=v\x00", 10_000)
	if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
	got, buf, err := proc.ReadFile(path, make([]byte, 16))
	if err != nil || string(got) != want {
		t.Fatalf("read %d bytes (%v), want %d", len(got), err, len(want))
	}
	if len(buf) < len(want) {
		t.Errorf("the buffer handed back holds %d bytes, less than was read", len(buf))
	}
	if got, _, err := proc.ReadFile(path, nil); err != nil || string(got) != want {
		t.Errorf("with no buffer: read %d bytes (%v), want %d", len(got), err, len(want))
	}
	if _, _, err := proc.ReadFile(filepath.Join(t.TempDir(), "gone"), buf); err == nil {
		t.Error("a missing file read without an error")
	}
}
