package proc

import (
	"bytes"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ClockTick is the unit of the stat line's times: USER_HZ, 100 on every
// Linux architecture Go supports.
const ClockTick = 10 * time.Millisecond

// Stat is what /proc/<pid>/stat says of one process, the fields fleetd
// reads of it.
type Stat struct {
	PID, PPID, PGRP int
	// Session is the process's session; TTY its controlling terminal's
	// device number, 0 for none (a daemon, a process that left its
	// session with setsid).
	Session, TTY int
	// TPGID is the foreground process group of the process's terminal.
	TPGID int
	// Comm is the command name, without its parentheses.
	Comm string
	// State is the process's state letter: R running, S sleeping, Z a
	// zombie not yet reaped, X dead, …
	State byte
	// UTime and STime are the process's own CPU (user, system) in clock
	// ticks; CUTime and CSTime its reaped children's (their own children's
	// with them: a child's time goes to its parent once the parent waits
	// for it).
	UTime, STime, CUTime, CSTime uint64
	// Start is when the process started, in clock ticks after boot: with
	// the pid, it names one process, whatever pids are reused for later.
	Start uint64
}

// CPU is the process's own CPU time, user and system.
func (s Stat) CPU() time.Duration { return time.Duration(s.UTime+s.STime) * ClockTick }

// Alive reports whether the process runs: it is neither a zombie waiting
// to be reaped nor dead.
func (s Stat) Alive() bool { return s.State != 'Z' && s.State != 'X' }

// Reaped is the CPU time of the children the process has waited for.
func (s Stat) Reaped() time.Duration { return time.Duration(s.CUTime+s.CSTime) * ClockTick }

// ParseStat parses a stat line. The command name, in parentheses, may
// hold spaces and parentheses itself: the fields after it count from the
// last closing parenthesis (state is field 3, ppid 4, pgrp 5, session 6, tty_nr 7, tpgid 8,
// utime 14 … cstime 17, starttime 22). A line too short for cstime is
// refused; one without a start time (only a hand-written one) has 0.
func ParseStat(raw []byte) (Stat, bool) {
	open, end := bytes.IndexByte(raw, '('), bytes.LastIndexByte(raw, ')')
	if open < 0 || end < open {
		return Stat{}, false
	}
	f := strings.Fields(string(raw[end+1:])) // state ppid pgrp session tty_nr tpgid …
	if len(f) < 15 {
		return Stat{}, false
	}
	s := Stat{Comm: string(raw[open+1 : end]), State: f[0][0]}
	var err error
	if s.PID, err = strconv.Atoi(strings.TrimSpace(string(raw[:open]))); err != nil {
		return Stat{}, false
	}
	for _, n := range []struct {
		field int
		to    *int
	}{{1, &s.PPID}, {2, &s.PGRP}, {3, &s.Session}, {4, &s.TTY}, {5, &s.TPGID}} {
		if *n.to, err = strconv.Atoi(f[n.field]); err != nil {
			return Stat{}, false
		}
	}
	for _, n := range []struct {
		field int
		to    *uint64
	}{{11, &s.UTime}, {12, &s.STime}, {13, &s.CUTime}, {14, &s.CSTime}} {
		if *n.to, err = strconv.ParseUint(f[n.field], 10, 64); err != nil {
			return Stat{}, false
		}
	}
	if len(f) > 19 {
		s.Start, _ = strconv.ParseUint(f[19], 10, 64)
	}
	return s, true
}

// ReadStat reads and parses dir/stat, dir being a process's directory
// (/proc/<pid>).
func ReadStat(dir string) (Stat, bool) {
	raw, _, err := ReadFile(filepath.Join(dir, "stat"), make([]byte, 512))
	if err != nil {
		return Stat{}, false
	}
	return ParseStat(raw)
}

// ReadFile reads a whole /proc file into buf (grown as needed) with plain
// open, read and close: os.ReadFile's stat and the runtime poller's setup
// of every file cost more than the read itself, and a scan reads a file
// of every process on the machine. It returns the bytes read and the
// buffer to use next.
func ReadFile(path string, buf []byte) ([]byte, []byte, error) {
	if len(buf) == 0 {
		buf = make([]byte, 512)
	}
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, buf, err
	}
	defer syscall.Close(fd)
	n := 0
	for {
		if n == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
		}
		m, err := syscall.Read(fd, buf[n:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, buf, err
		}
		if m == 0 {
			return buf[:n], buf, nil
		}
		n += m
	}
}
