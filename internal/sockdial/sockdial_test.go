package sockdial

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// echo serves one line back per connection on l.
func echo(t *testing.T, l net.Listener) {
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				line, _ := bufio.NewReader(c).ReadString('\n')
				io.WriteString(c, "echo "+line)
			}()
		}
	}()
}

func roundTrip(t *testing.T, f *os.File) {
	t.Helper()
	defer f.Close()
	if err := f.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatalf("SetDeadline: %v (the file is not on the poller)", err)
	}
	if _, err := io.WriteString(f, "hi\n"); err != nil {
		t.Fatal(err)
	}
	got, err := bufio.NewReader(f).ReadString('\n')
	if err != nil || got != "echo hi\n" {
		t.Fatalf("read %q, %v", got, err)
	}
}

func TestDialTCPAndUnix(t *testing.T) {
	ctx := context.Background()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	echo(t, l)
	f, err := Dial(ctx, "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := f.SyscallConn()
	rc.Control(func(fd uintptr) {
		if v, err := syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_NODELAY); err != nil || v == 0 {
			t.Errorf("TCP_NODELAY = %d, %v; want on", v, err)
		}
	})
	roundTrip(t, f)

	port := l.Addr().(*net.TCPAddr).Port
	f, err = Dial(ctx, "tcp", net.JoinHostPort("localhost", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("localhost: %v", err)
	}
	roundTrip(t, f)

	sock := filepath.Join(t.TempDir(), "s.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	echo(t, ul)
	f, err = Dial(ctx, "unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	roundTrip(t, f)
}

func TestDialErrors(t *testing.T) {
	ctx := context.Background()
	// A port nobody listens on: refused, said as connect's error.
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := l.Addr().String()
	l.Close()
	if _, err := Dial(ctx, "tcp", addr); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("closed port: %v, want ECONNREFUSED", err)
	}
	if _, err := Dial(ctx, "unix", filepath.Join(t.TempDir(), "none.sock")); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("missing socket: %v, want ENOENT", err)
	}
	if _, err := Dial(ctx, "tcp", "nats.example.invalid:4222"); !errors.Is(err, ErrNoResolver) {
		t.Errorf("a name: %v, want ErrNoResolver", err)
	}
	if _, err := Dial(ctx, "tcp", "127.0.0.1"); err == nil {
		t.Error("no port: no error")
	}
	if _, err := Dial(ctx, "udp", "127.0.0.1:1"); err == nil {
		t.Error("udp: no error")
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Dial(done, "tcp", addr); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestHostsFile(t *testing.T) {
	hosts := filepath.Join(t.TempDir(), "hosts")
	os.WriteFile(hosts, []byte("# comment\n::1 natsbox\n10.1.2.3 natsbox nb # the box\nbad line\n"), 0o644)
	old := hostsFile
	hostsFile = hosts
	t.Cleanup(func() { hostsFile = old })
	for in, want := range map[string]string{"natsbox:4222": "10.1.2.3:4222", "NB:1": "10.1.2.3:1", "localhost:5": "127.0.0.1:5", "[::1]:7": "[::1]:7", "[::ffff:127.0.0.1]:8": "127.0.0.1:8"} {
		ap, err := resolve(in)
		if err != nil || ap.String() != want {
			t.Errorf("resolve(%q) = %v, %v; want %s", in, ap, err, want)
		}
	}
}

// Loopback tells a peer on this machine's loopback from any other: a
// unix socket is not one, nor is an address of another interface.
func TestLoopbackIsThePeersAddress(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	dialed := func(network, address string) *os.File {
		t.Helper()
		f, err := Dial(ctx, network, address)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			t.Logf("%s: %v (no such loopback here)", addr, err)
			continue
		}
		echo(t, l)
		if !Loopback(dialed("tcp", l.Addr().String())) {
			t.Errorf("%s: not loopback", l.Addr())
		}
	}
	sock := filepath.Join(t.TempDir(), "s")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	echo(t, l)
	if Loopback(dialed("unix", sock)) {
		t.Error("a unix socket: loopback")
	}
	// Another interface's address, when this machine has one.
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		ip, ok := a.(*net.IPNet)
		if !ok || ip.IP.IsLoopback() || ip.IP.To4() == nil {
			continue
		}
		l, err := net.Listen("tcp", net.JoinHostPort(ip.IP.String(), "0"))
		if err != nil {
			continue
		}
		echo(t, l)
		if Loopback(dialed("tcp", l.Addr().String())) {
			t.Errorf("%s: loopback", l.Addr())
		}
		return
	}
	t.Log("no address but loopback here: the other-interface case is not checked")
}
