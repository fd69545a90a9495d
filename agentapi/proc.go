package agentapi

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/fleetd/fleetd/internal/proc"
)

// procRoot is where /proc is; the functions below read Linux's.
const procRoot = "/proc"

// AgentPID is the agent's process id: agentapi's child (agentapi does not
// say it; it is found in /proc, once, and kept). Linux only.
func (s *Server) AgentPID() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.agentPID > 0 {
		return s.agentPID, nil
	}
	pid, err := childOf(procRoot, s.PID())
	if err != nil {
		return 0, err
	}
	s.agentPID = pid
	return pid, nil
}

// Foreground returns the process group leader in the foreground of the
// agent's terminal and its command name: the agent itself while it waits
// or works, something else (a shell it ran, an editor) when that took the
// terminal — what herdrbridge reads of a pane before it types. Linux only.
func (s *Server) Foreground() (pid int, comm string, err error) {
	agent, err := s.AgentPID()
	if err != nil {
		return 0, "", err
	}
	st, ok := proc.ReadStat(filepath.Join(procRoot, strconv.Itoa(agent)))
	if !ok {
		return 0, "", fmt.Errorf("agentapi: agent %d: no readable /proc stat (it exited?)", agent)
	}
	if st.TPGID <= 0 {
		return 0, "", fmt.Errorf("agentapi: agent %d has no terminal foreground group", agent)
	}
	fg, ok := proc.ReadStat(filepath.Join(procRoot, strconv.Itoa(st.TPGID)))
	if !ok {
		return st.TPGID, "", nil // the group's leader exited; its group may live on
	}
	return fg.PID, fg.Comm, nil
}

// childOf finds the (first, live) child of parent by scanning /proc.
func childOf(root string, parent int) (int, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return 0, fmt.Errorf("agentapi: find the agent: %w", err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := proc.ReadStat(filepath.Join(root, e.Name())); ok && st.PPID == parent && st.Alive() {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("agentapi: no live child of agentapi (pid %d) in %s", parent, root)
}

// listensOn reports whether process pid holds a socket listening on TCP
// port; known is false when /proc cannot tell (not Linux, no access).
func listensOn(pid, port int) (owned, known bool) {
	inodes := map[string]bool{}
	readable := false
	for _, f := range []string{"net/tcp", "net/tcp6"} {
		fh, err := os.Open(filepath.Join(procRoot, strconv.Itoa(pid), f))
		if err != nil {
			continue
		}
		readable = true
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
			f := strings.Fields(sc.Text())
			if len(f) < 10 || f[3] != "0A" { // 0A: LISTEN
				continue
			}
			_, hexPort, ok := strings.Cut(f[1], ":")
			if p, err := strconv.ParseInt(hexPort, 16, 32); ok && err == nil && int(p) == port {
				inodes[f[9]] = true
			}
		}
		fh.Close()
	}
	if !readable {
		return false, false
	}
	fds, err := os.ReadDir(filepath.Join(procRoot, strconv.Itoa(pid), "fd"))
	if err != nil {
		return false, false
	}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(procRoot, strconv.Itoa(pid), "fd", fd.Name()))
		if inode, ok := strings.CutPrefix(link, "socket:["); err == nil && ok && inodes[strings.TrimSuffix(inode, "]")] {
			return true, true
		}
	}
	return false, true
}

// procReadable reports whether this system's /proc shows sockets at all
// (procRoot/self/net/tcp): where it does not, listensOn can tell nothing.
func procReadable() bool {
	_, err := os.Stat(filepath.Join(procRoot, "self", "net", "tcp"))
	return err == nil
}
