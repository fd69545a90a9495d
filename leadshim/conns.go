package leadshim

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// connLimiter is the shim's listener: it caps open connections and those
// that have not yet sent a whole request header. A connection over either
// cap is answered 503 and closed as it is accepted, so the accept loop
// never stalls and the process never runs out of file descriptors — which
// the embedded NATS server shares.
type connLimiter struct {
	net.Listener
	maxConns, maxPending int

	mu      sync.Mutex
	open    int
	pending int
	refused atomic.Uint64
}

func newConnLimiter(ln net.Listener, maxConns, maxPending int) *connLimiter {
	return &connLimiter{Listener: ln, maxConns: maxConns, maxPending: maxPending}
}

// refusal is what a connection over a cap reads before it is closed
// (made on first use: every process of the binary, each hook run, would
// pay for the JSON encoding at start).
var refusal = sync.OnceValue(func() []byte {
	body := jsonBody(Error{Err: ErrorBody{Code: "too_many_connections", Message: "the shim has too many open connections; try again later"}})
	return fmt.Appendf(nil, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
})

func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		over := l.open >= l.maxConns || l.pending >= l.maxPending
		if !over {
			l.open++
			l.pending++
		}
		l.mu.Unlock()
		if !over {
			return &limitedConn{Conn: c, l: l, pending: true}, nil
		}
		l.refused.Add(1)
		// A fresh socket's send buffer is empty: this write does not
		// block, and the deadline makes sure of it.
		_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = c.Write(refusal())
		_ = c.Close()
	}
}

// counts returns the open and pending connections.
func (l *connLimiter) counts() (open, pending int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open, l.pending
}

// limitedConn is an accepted connection, counted until it closes.
type limitedConn struct {
	net.Conn
	l *connLimiter

	once    sync.Once
	mu      sync.Mutex
	pending bool
}

// served marks the connection as having sent a whole request header: it
// no longer counts against the pending cap.
func (c *limitedConn) served() {
	c.mu.Lock()
	was := c.pending
	c.pending = false
	c.mu.Unlock()
	if was {
		c.l.mu.Lock()
		c.l.pending--
		c.l.mu.Unlock()
	}
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.served()
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return err
}

type connKey struct{}

// withConn is the http.Server's ConnContext: it lets a request find its
// connection, to mark it served.
func withConn(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if lc, ok := c.(*limitedConn); ok {
		return context.WithValue(ctx, connKey{}, lc)
	}
	return ctx
}

// markServed tells the limiter that ctx's connection sent a request.
func markServed(ctx context.Context) {
	if lc, ok := ctx.Value(connKey{}).(*limitedConn); ok {
		lc.served()
	}
}
