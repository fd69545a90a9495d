package sockdial

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ErrNoResolver is a host name that is neither "localhost" nor in
// /etc/hosts: sockdial asks no DNS server.
var ErrNoResolver = errors.New("sockdial: a host name it cannot resolve without DNS (give an IP address)")

// hostsFile is read for names other than localhost (a var for tests).
var hostsFile = "/etc/hosts"

// Dial connects to address on network ("tcp": host:port; "unix": a
// socket path) until ctx ends. The file is non-blocking, so its
// deadlines work; a TCP connection has Nagle's algorithm off, as
// net.Dial leaves it.
func Dial(ctx context.Context, network, address string) (*os.File, error) {
	switch network {
	case "unix":
		return dial(ctx, syscall.AF_UNIX, &syscall.SockaddrUnix{Name: address}, address)
	case "tcp":
		ap, err := resolve(address)
		if err != nil {
			return nil, err
		}
		if ap.Addr().Is4() {
			return dial(ctx, syscall.AF_INET, &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}, address)
		}
		return dial(ctx, syscall.AF_INET6, &syscall.SockaddrInet6{Port: int(ap.Port()), Addr: ap.Addr().As16()}, address)
	}
	return nil, fmt.Errorf("sockdial: network %q (tcp or unix)", network)
}

// resolve turns host:port into an address, preferring IPv4 for a name
// (NATS listens on 127.0.0.1 by default).
func resolve(address string) (netip.AddrPort, error) {
	i := strings.LastIndexByte(address, ':')
	if i < 0 {
		return netip.AddrPort{}, fmt.Errorf("sockdial: %q: no port", address)
	}
	host, portText := strings.Trim(address[:i], "[]"), address[i+1:]
	port, err := strconv.ParseUint(portText, 10, 16)
	if err != nil {
		return netip.AddrPort{}, fmt.Errorf("sockdial: %q: port %q", address, portText)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		return netip.AddrPortFrom(ip.Unmap(), uint16(port)), nil
	}
	ip, err := lookupHosts(host)
	if err != nil {
		return netip.AddrPort{}, err
	}
	return netip.AddrPortFrom(ip, uint16(port)), nil
}

// lookupHosts finds host in the hosts file (an IPv4 address first), and
// localhost where the file does not name it.
func lookupHosts(host string) (netip.Addr, error) {
	var found netip.Addr
	if f, err := os.Open(hostsFile); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			line, _, _ := strings.Cut(sc.Text(), "#")
			fields := strings.Fields(line)
			if len(fields) < 2 {
				continue
			}
			ip, err := netip.ParseAddr(fields[0])
			if err != nil {
				continue
			}
			for _, name := range fields[1:] {
				if strings.EqualFold(name, host) && (!found.IsValid() || ip.Is4() && !found.Is4()) {
					found = ip.Unmap()
				}
			}
		}
	}
	switch {
	case found.IsValid():
		return found, nil
	case strings.EqualFold(host, "localhost"):
		return netip.AddrFrom4([4]byte{127, 0, 0, 1}), nil
	}
	return netip.Addr{}, fmt.Errorf("%w: %q", ErrNoResolver, host)
}

func dial(ctx context.Context, family int, sa syscall.Sockaddr, name string) (*os.File, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	fd, err := syscall.Socket(family, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, os.NewSyscallError("socket", err)
	}
	if family != syscall.AF_UNIX {
		// Small request/reply frames: Nagle would hold the second
		// write of a pipelined pair until the first is acknowledged.
		if err := syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1); err != nil {
			syscall.Close(fd)
			return nil, os.NewSyscallError("setsockopt", err)
		}
	}
	cerr := syscall.Connect(fd, sa)
	for cerr == syscall.EINTR {
		cerr = syscall.Connect(fd, sa)
	}
	// A non-blocking descriptor: os.NewFile hands it to the poller.
	f := os.NewFile(uintptr(fd), name)
	switch cerr {
	case nil:
		return f, nil
	case syscall.EINPROGRESS, syscall.EALREADY:
	default:
		f.Close()
		return nil, fmt.Errorf("sockdial: connect %s: %w", name, os.NewSyscallError("connect", cerr))
	}
	if err := awaitConnect(ctx, f); err != nil {
		f.Close()
		return nil, fmt.Errorf("sockdial: connect %s: %w", name, err)
	}
	return f, nil
}

// awaitConnect waits until f's connect finished (the socket turns
// writable) and returns its outcome (SO_ERROR), or ctx's error.
func awaitConnect(ctx context.Context, f *os.File) error {
	if dl, ok := ctx.Deadline(); ok {
		f.SetWriteDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { f.SetWriteDeadline(time.Unix(1, 0)) })
	defer func() {
		stop()
		f.SetWriteDeadline(time.Time{})
	}()
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	// Ask the socket before every wait, never wait first: the poller
	// forgets a writable edge that came before this Write began (it
	// resets the descriptor's write state), so a connect that finished
	// in between would be waited on until the deadline, or for ever.
	var soErr error
	err = rc.Write(func(fd uintptr) bool {
		v, err := syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_ERROR)
		switch {
		case err != nil:
			soErr = os.NewSyscallError("getsockopt", err)
			return true
		case v != 0:
			soErr = os.NewSyscallError("connect", syscall.Errno(v))
			return true
		}
		if _, err := syscall.Getpeername(int(fd)); err == syscall.ENOTCONN {
			return false // still connecting: wait for writability
		}
		return true
	})
	switch {
	case err == nil:
		return soErr
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The write deadline is ctx's; its timer may fire a moment
		// before the context's own.
		return context.DeadlineExceeded
	}
	return err
}

// Loopback reports whether f, a socket Dial connected, is connected to
// an address of this machine's loopback interface (127.0.0.0/8, ::1): a
// peer on the same host, where nothing sent crosses a network.
func Loopback(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var peer syscall.Sockaddr
	var perr error
	if err := rc.Control(func(fd uintptr) { peer, perr = syscall.Getpeername(int(fd)) }); err != nil || perr != nil {
		return false
	}
	switch sa := peer.(type) {
	case *syscall.SockaddrInet4:
		return netip.AddrFrom4(sa.Addr).IsLoopback()
	case *syscall.SockaddrInet6:
		return netip.AddrFrom16(sa.Addr).Unmap().IsLoopback()
	}
	return false
}
