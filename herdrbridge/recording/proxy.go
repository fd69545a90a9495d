package recording

import (
	"bufio"
	"io"
	"net"
	"os"
	"slices"
	"sync"
	"time"
)

// Wire is one line that crossed herdr's socket, or a note of the
// scenario's own.
type Wire struct {
	At time.Time
	// Conn numbers the connection (one request per connection, herdr's
	// rule); Request is true for the line the client wrote, false for
	// the server's answer and, on a subscription, each event.
	Conn    int
	Request bool
	Line    []byte
	// Note is set (and Line empty) for a note (Proxy.Note).
	Note, NotePane string
	// Context marks the request of a connection opened before the lines
	// it precedes were taken (Take): what its later lines answer, not a
	// step of their own.
	Context bool
}

// Proxy is a recording proxy on herdr's socket: each connection to it is
// forwarded to the server's socket, and every line either way is kept
// with its time.
type Proxy struct {
	path, upstream string
	ln             net.Listener
	wg             sync.WaitGroup

	mu     sync.Mutex
	wire   []Wire
	open   map[int]Wire // each open connection's request
	conns  map[net.Conn]bool
	nextID int
	closed bool
}

// Interpose puts a recording proxy in front of the herdr server listening
// at path: the server's socket is moved to path+".upstream" (a bound
// socket keeps working under its new name) and the proxy listens at path.
// Everything that already knows path — the bridge, the panes' hooks
// (HERDR_SOCKET_PATH), the bridge's /proc checks of a pane's processes,
// which match that variable — goes through the proxy unchanged.
func Interpose(path string) (*Proxy, error) {
	up := path + ".upstream"
	if err := os.Rename(path, up); err != nil {
		return nil, err
	}
	p, err := Listen(path, up)
	if err != nil {
		os.Rename(up, path)
		return nil, err
	}
	return p, nil
}

// Listen starts a recording proxy at path for the herdr socket at
// upstream.
func Listen(path, upstream string) (*Proxy, error) {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	os.Chmod(path, 0o600)
	p := &Proxy{path: path, upstream: upstream, ln: ln, conns: map[net.Conn]bool{}, open: map[int]Wire{}}
	p.wg.Go(p.accept)
	return p, nil
}

// Path is where the proxy listens.
func (p *Proxy) Path() string { return p.path }

// Upstream is the server's socket.
func (p *Proxy) Upstream() string { return p.upstream }

// Note records something the scenario itself did to pane.
func (p *Proxy) Note(pane, what string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.wire = append(p.wire, Wire{At: time.Now(), Note: what, NotePane: pane})
}

// Take returns the wire recorded since the last Take and starts afresh:
// one scenario's part of a session that runs several. The requests of
// connections still open from before (subscriptions) come first, as
// Context, so that their later lines can be read.
func (p *Proxy) Take() []Wire {
	p.mu.Lock()
	defer p.mu.Unlock()
	in := map[int]bool{}
	for _, w := range p.wire {
		if w.Request {
			in[w.Conn] = true
		}
	}
	var out []Wire
	for id, w := range p.open {
		if !in[id] {
			w.Context = true
			out = append(out, w)
		}
	}
	slices.SortFunc(out, func(a, b Wire) int { return a.Conn - b.Conn })
	out = append(out, p.wire...)
	p.wire = nil
	return out
}

// Close stops the proxy, ends its connections and waits for them.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	err := p.ln.Close()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			c.Close()
			return
		}
		p.nextID++
		id := p.nextID
		p.conns[c] = true
		p.mu.Unlock()
		p.wg.Go(func() { p.serve(id, c) })
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = true
	return true
}

func (p *Proxy) forget(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
		c.Close()
	}
}

func (p *Proxy) record(id int, req bool, line []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := Wire{At: time.Now(), Conn: id, Request: req, Line: append([]byte(nil), line...)}
	if req {
		if _, ok := p.open[id]; !ok {
			p.open[id] = w
		}
	}
	p.wire = append(p.wire, w)
}

func (p *Proxy) connDone(id int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.open, id)
}

// serve forwards one connection: the client's request line, then the
// server's lines back until either side closes (closing the client's side
// ends a subscription or a wait upstream, as herdr expects).
func (p *Proxy) serve(id int, c net.Conn) {
	up, err := net.Dial("unix", p.upstream)
	if err != nil {
		p.forget(c)
		return
	}
	if !p.track(up) {
		p.forget(c, up)
		return
	}
	defer p.forget(c, up)
	defer p.connDone(id)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer up.Close()
		copyLines(c, up, func(l []byte) { p.record(id, true, l) })
	})
	copyLines(up, c, func(l []byte) { p.record(id, false, l) })
	c.Close()
	wg.Wait()
}

// copyLines copies from src to dst line by line, handing each complete
// line (without its newline) to seen before it is written on.
func copyLines(src io.Reader, dst io.Writer, seen func([]byte)) {
	r := bufio.NewReaderSize(src, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			if line[len(line)-1] == '\n' {
				seen(line[:len(line)-1])
			}
			if _, werr := dst.Write(line); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed side: either ends the connection
		}
	}
}
