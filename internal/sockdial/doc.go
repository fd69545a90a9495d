// Package sockdial dials a TCP or Unix stream socket with package syscall
// and returns it as an *os.File, whose reads, writes and deadlines go
// through the runtime's poller as a net.Conn's do.
//
// It exists for one program: the hook binary (cmd/fleetd-hook), which an
// agent execs twice a turn and waits for. Linking package net there links
// runtime/cgo too wherever cgo is on (the default with a C compiler), and
// a dynamically linked hook pays the dynamic loader on every exec — about
// fifty page faults, at ~25 µs each on a small VM, for a process that
// makes two local connections. sockdial links neither.
//
// What it gives up is name resolution: an address is an IP literal,
// "localhost", or a name in /etc/hosts (ErrNoResolver otherwise). A hook
// that cannot dial spools its events, and the gateway replays them, so a
// name the hook cannot resolve costs time, not events.
package sockdial
