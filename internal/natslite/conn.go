package natslite

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fleetd/fleetd/internal/sockdial"
)

// Options say who a Conn is to the server. Token, User and Password are
// taken from the URL when these are empty, as nats.go does.
type Options struct {
	// Name is the client's name in the server's connection list.
	Name string
	// Timeout bounds the dial and the handshake (its PONG) when ctx
	// allows longer. Default 2 s.
	Timeout time.Duration
	// Token is an authorization token.
	Token string
	// User and Password are a user's name and password.
	User, Password string
	// NKey is the public key Sign signs with (an nkey user); with JWT, a
	// user JWT's key, and NKey is not sent.
	NKey, JWT string
	// Sign signs the server's nonce with the key's private half.
	Sign func(nonce []byte) ([]byte, error)
	// Pipelined makes Connect return once its CONNECT, SUB and PING are
	// written, without waiting for the PONG: the server's answer (or its
	// -ERR refusing the login) is read with the first reply, so the
	// first request rides in the same round trip as the handshake. A
	// refused login is then the first request's error, not Connect's.
	// When nothing secret could leak — no nonce to sign, and no token or
	// password, or a server on this machine (a loopback address) — it
	// does not wait for the server's INFO either: CONNECT goes out with
	// the dial, and the INFO is read (and checked) with the first reply.
	// That is one wait for the server fewer, which on an idle machine is
	// a process woken fewer, each time a hook runs.
	Pipelined bool
	// InboxPrefix is the prefix of the reply subjects; default "_INBOX".
	// An identity whose permissions allow only its own inbox needs its
	// own.
	InboxPrefix string
}

// Conn is one connection to a NATS server: not safe for concurrent use.
type Conn struct {
	nc         *os.File // a socket from sockdial: package net would make the hook a cgo binary
	br         *bufio.Reader
	inbox      string // the subscription's prefix: replies go to inbox.<n>
	n          uint64 // the last reply token used
	maxPayload int64
	// info is true until the server's INFO is read: a connection that
	// sent its CONNECT without it reads it with the first reply, by
	// infoBy (the dial's bound, Options.Timeout). until is the bound of
	// the wait in progress (bound), zero for none.
	info          bool
	infoBy, until time.Time
	// out is what is written and not yet sent: the requests a caller
	// sends before it awaits go out in one write (flush).
	out []byte
	// waiting are the replies sent for and not yet awaited; early holds
	// those of them that came while another was awaited.
	waiting map[string]bool
	early   map[string]Msg
}

// serverInfo is the part of the server's INFO natslite reads.
type serverInfo struct {
	TLSRequired bool   `json:"tls_required"`
	Nonce       string `json:"nonce"`
	Headers     bool   `json:"headers"`
	MaxPayload  int64  `json:"max_payload"`
}

// connectInfo is the CONNECT natslite sends.
type connectInfo struct {
	Verbose      bool   `json:"verbose"`
	Pedantic     bool   `json:"pedantic"`
	TLSRequired  bool   `json:"tls_required"`
	Name         string `json:"name,omitempty"`
	Lang         string `json:"lang"`
	Version      string `json:"version"`
	Protocol     int    `json:"protocol"`
	Echo         bool   `json:"echo"`
	Headers      bool   `json:"headers"`
	NoResponders bool   `json:"no_responders"`
	Token        string `json:"auth_token,omitempty"`
	User         string `json:"user,omitempty"`
	Password     string `json:"pass,omitempty"`
	NKey         string `json:"nkey,omitempty"`
	JWT          string `json:"jwt,omitempty"`
	Sig          string `json:"sig,omitempty"`
}

// Connect dials the first server of urls (comma-separated, as nats.go
// takes them) that lets it in, and completes the handshake: CONNECT, the
// inbox subscription and a PING answered, so a refused login or
// subscription is an error here. It starts no goroutine.
func Connect(ctx context.Context, urls string, o Options) (*Conn, error) {
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Second
	}
	if o.InboxPrefix == "" {
		o.InboxPrefix = "_INBOX"
	}
	var errs []error
	for u := range strings.SplitSeq(urls, ",") {
		c, err := connect(ctx, strings.TrimSpace(u), o)
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

func connect(ctx context.Context, raw string, o Options) (*Conn, error) {
	if !strings.Contains(raw, "://") {
		raw = "nats://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("natslite: %w", err)
	}
	switch u.Scheme {
	case "nats":
	case "tls":
		return nil, fmt.Errorf("%w (%s)", ErrTLS, u.Redacted())
	default:
		return nil, fmt.Errorf("natslite: %s: unsupported scheme %q", u.Redacted(), u.Scheme)
	}
	host := u.Host
	if u.Port() == "" {
		host = u.Hostname() + ":4222"
		if strings.Contains(u.Hostname(), ":") {
			host = "[" + u.Hostname() + "]:4222"
		}
	}
	if u.User != nil && o.Token == "" && o.User == "" && o.Sign == nil {
		if pw, ok := u.User.Password(); ok {
			o.User, o.Password = u.User.Username(), pw
		} else {
			o.Token = u.User.Username()
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	nc, err := sockdial.Dial(ctx, "tcp", host)
	if err != nil {
		return nil, fmt.Errorf("natslite: %w", err)
	}
	// bufio's default 4 KiB: a message body is read whole into its own
	// buffer, and each 4 KiB more here is a page the hook faults in.
	c := &Conn{nc: nc, br: bufio.NewReader(nc)}
	if err := c.handshake(ctx, o, o.early(func() bool { return sockdial.Loopback(nc) })); err != nil {
		nc.Close()
		return nil, fmt.Errorf("natslite: connect %s: %w", u.Redacted(), err)
	}
	return c, nil
}

// early reports whether CONNECT may go before the server's INFO
// (Options.Pipelined): never with a nonce to sign, which the INFO
// carries; with a token or a password only to a server on this machine
// (loopback), as a server that wants TLS says so in its INFO, and the
// secret must not cross a network in the clear before that is known.
func (o Options) early(loopback func() bool) bool {
	switch {
	case !o.Pipelined || o.Sign != nil:
		return false
	case o.Token == "" && o.User == "" && o.Password == "":
		return true
	}
	return loopback()
}

func (c *Conn) handshake(ctx context.Context, o Options, early bool) error {
	defer c.bound(ctx)()
	var info serverInfo
	if c.info = early; early {
		c.infoBy, _ = ctx.Deadline() // connect's: the dial's bound or sooner
	} else {
		line, err := c.line()
		if err != nil {
			return err
		}
		payload, ok := strings.CutPrefix(line, "INFO ")
		if !ok {
			return fmt.Errorf("%w: want INFO, got %q", ErrProtocol, line)
		}
		if info, err = c.readInfo(payload); err != nil {
			return err
		}
	}
	ci := connectInfo{Name: o.Name, Lang: "go", Version: "natslite", Protocol: 1, Echo: true, Headers: true, NoResponders: true,
		Token: o.Token, User: o.User, Password: o.Password}
	if o.Sign != nil {
		sig, err := o.Sign([]byte(info.Nonce))
		if err != nil {
			return fmt.Errorf("sign the nonce: %w", err)
		}
		ci.Sig = base64.RawURLEncoding.EncodeToString(sig)
		if ci.JWT = o.JWT; ci.JWT == "" {
			ci.NKey = o.NKey
		}
	}
	b, err := json.Marshal(ci)
	if err != nil {
		return err
	}
	var token [12]byte
	if _, err := rand.Read(token[:]); err != nil {
		return err
	}
	c.inbox = o.InboxPrefix + "." + hex.EncodeToString(token[:])
	c.out = fmt.Appendf(c.out, "CONNECT %s\r\nSUB %s.* 1\r\nPING\r\n", b, c.inbox)
	if o.Pipelined {
		// Written with the first request (Send), in one write: next
		// reads the PONG, or the -ERR, before any reply.
		return nil
	}
	if err := c.flush(); err != nil {
		return err
	}
	for {
		line, err := c.line()
		if err != nil {
			return err
		}
		switch {
		case line == "PONG":
			return nil
		case line == "PING":
			if _, err := io.WriteString(c.nc, "PONG\r\n"); err != nil {
				return err
			}
		case strings.HasPrefix(line, "-ERR"):
			return fmt.Errorf("%w: %s", ErrServer, strings.TrimSpace(strings.TrimPrefix(line, "-ERR")))
		}
	}
}

// readInfo checks the server's INFO: no TLS, headers taken; it keeps
// the server's max_payload.
func (c *Conn) readInfo(payload string) (serverInfo, error) {
	var info serverInfo
	if err := json.Unmarshal([]byte(payload), &info); err != nil {
		return info, fmt.Errorf("%w: INFO: %v", ErrProtocol, err)
	}
	if info.TLSRequired {
		return info, ErrTLS
	}
	if !info.Headers {
		return info, fmt.Errorf("%w: the server does not take headers", ErrProtocol)
	}
	c.maxPayload = info.MaxPayload
	return info, nil
}

// bound makes the connection's reads and writes end with ctx: at its
// deadline, or at once when it is cancelled. The returned func undoes it.
func (c *Conn) bound(ctx context.Context) func() {
	c.until, _ = ctx.Deadline()
	if d := c.until; c.info && (d.IsZero() || c.infoBy.Before(d)) {
		// The INFO is still owed, within the dial's bound: a server that
		// takes the connection and says nothing fails the wait then.
		c.nc.SetDeadline(c.infoBy)
	} else if !d.IsZero() {
		c.nc.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { c.nc.SetDeadline(time.Unix(1, 0)) })
	return func() {
		stop()
		c.nc.SetDeadline(time.Time{})
	}
}

// line reads one protocol line without its CRLF.
func (c *Conn) line() (string, error) {
	s, err := c.br.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimRight(s, "\r\n"), nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.nc.Close() }

// Msg is a message received: a reply.
type Msg struct {
	Subject string
	// Status is the NATS status of a message with headers (404, 503…),
	// 0 when it has none; Description is its text.
	Status      int
	Description string
	Header      Header
	Data        []byte
}

// Header is a message's headers.
type Header map[string][]string

// Get is the first value of key, matched without regard to case.
func (h Header) Get(key string) string {
	if v, ok := h[key]; ok && len(v) > 0 {
		return v[0]
	}
	for k, v := range h {
		if strings.EqualFold(k, key) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// Set sets key to value alone.
func (h Header) Set(key, value string) { h[key] = []string{value} }

// Request publishes data (with hdr, when not empty) on subject with a
// reply subject of its own, and waits for the reply until ctx ends. A
// reply whose status is 503 is ErrNoResponders; a -ERR the server sends
// meanwhile (a publish its permissions refuse) is ErrServer.
func (c *Conn) Request(ctx context.Context, subject string, hdr Header, data []byte) (Msg, error) {
	reply, err := c.Send(ctx, subject, hdr, data)
	if err != nil {
		return Msg{}, err
	}
	return c.Await(ctx, reply)
}

// Send queues a request and returns its reply subject, for Await, which
// writes what is queued before it reads: a caller that sends several
// before awaiting any pays one write and one round trip for all of them.
func (c *Conn) Send(ctx context.Context, subject string, hdr Header, data []byte) (string, error) {
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	c.n++
	reply := c.inbox + "." + strconv.FormatUint(c.n, 10)
	frame, err := c.frame(subject, reply, hdr, data)
	if err != nil {
		return "", err
	}
	c.out = append(c.out, frame...)
	if c.waiting == nil {
		c.waiting, c.early = map[string]bool{}, map[string]Msg{}
	}
	c.waiting[reply] = true
	return reply, nil
}

// Await reads until the reply to a Send's reply subject arrives, keeping
// the replies to other requests still waiting for their Await; a reply
// nobody waits for (a request that gave up) is dropped.
func (c *Conn) Await(ctx context.Context, reply string) (Msg, error) {
	m, ok := c.early[reply]
	if !ok {
		defer c.bound(ctx)()
		if err := c.flush(); err != nil {
			delete(c.waiting, reply)
			return Msg{}, c.ioErr(ctx, err)
		}
		for {
			var err error
			if m, err = c.next(); err != nil {
				delete(c.waiting, reply)
				return Msg{}, c.ioErr(ctx, err)
			}
			if m.Subject == reply {
				break
			}
			if c.waiting[m.Subject] {
				c.early[m.Subject] = m
			}
		}
	}
	delete(c.early, reply)
	delete(c.waiting, reply)
	if m.Status == 503 {
		return m, ErrNoResponders
	}
	return m, nil
}

// flush writes what Send and the handshake left in out.
func (c *Conn) flush() error {
	if len(c.out) == 0 {
		return nil
	}
	_, err := c.nc.Write(c.out)
	c.out = c.out[:0]
	return err
}

// ioErr is ctx's error when ctx ended the read or write.
func (c *Conn) ioErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("natslite: %w", ctx.Err())
	}
	return err
}

// frame is the PUB or HPUB of a message.
func (c *Conn) frame(subject, reply string, hdr Header, data []byte) ([]byte, error) {
	var head []byte
	if len(hdr) > 0 {
		head = append(head, "NATS/1.0\r\n"...)
		for _, k := range slices.Sorted(maps.Keys(hdr)) {
			for _, v := range hdr[k] {
				if strings.ContainsAny(k, ":\r\n") || strings.ContainsAny(v, "\r\n") {
					return nil, fmt.Errorf("natslite: header %q: a colon or line break", k)
				}
				head = append(append(append(append(head, k...), ": "...), v...), "\r\n"...)
			}
		}
		head = append(head, "\r\n"...)
	}
	size := int64(len(head) + len(data))
	if c.maxPayload > 0 && size > c.maxPayload {
		return nil, fmt.Errorf("natslite: a message of %d bytes, over the server's max_payload %d", size, c.maxPayload)
	}
	b := make([]byte, 0, len(subject)+len(reply)+len(head)+len(data)+48)
	if head == nil {
		b = fmt.Appendf(b, "PUB %s %s %d\r\n", subject, reply, len(data))
	} else {
		b = fmt.Appendf(b, "HPUB %s %s %d %d\r\n", subject, reply, len(head), size)
		b = append(b, head...)
	}
	b = append(b, data...)
	return append(b, "\r\n"...), nil
}

// next reads until a message arrives, answering the server's PINGs; -ERR
// is an error.
func (c *Conn) next() (Msg, error) {
	for {
		line, err := c.line()
		if err != nil {
			return Msg{}, err
		}
		verb, args, _ := strings.Cut(line, " ")
		switch verb = strings.ToUpper(verb); verb {
		case "INFO":
			// The first is the handshake's, when CONNECT went before it;
			// later ones (a cluster's changes) say nothing a hook needs.
			if c.info {
				c.info = false
				c.nc.SetDeadline(c.until) // the server is there: the caller's bound again
				if _, err := c.readInfo(args); err != nil {
					return Msg{}, err
				}
			}
		case "PING":
			if _, err := io.WriteString(c.nc, "PONG\r\n"); err != nil {
				return Msg{}, err
			}
		case "-ERR":
			return Msg{}, fmt.Errorf("%w: %s", ErrServer, args)
		case "MSG", "HMSG":
			return c.msg(verb == "HMSG", strings.Fields(args))
		}
	}
}

// msg reads a MSG's (or HMSG's) payload: args are its subject, sid,
// optional reply, [header size,] total size.
func (c *Conn) msg(headers bool, args []string) (Msg, error) {
	want := 3
	if headers {
		want = 4
	}
	if len(args) != want && len(args) != want+1 {
		return Msg{}, fmt.Errorf("%w: a message line with %d fields", ErrProtocol, len(args))
	}
	total, err := strconv.Atoi(args[len(args)-1])
	hsize := 0
	if err == nil && headers {
		hsize, err = strconv.Atoi(args[len(args)-2])
	}
	if err != nil || total < 0 || hsize < 0 || hsize > total {
		return Msg{}, fmt.Errorf("%w: message sizes %q", ErrProtocol, args)
	}
	buf := make([]byte, total+2)
	if _, err := io.ReadFull(c.br, buf); err != nil {
		return Msg{}, err
	}
	m := Msg{Subject: args[0], Data: buf[hsize:total]}
	if headers {
		if err := m.readHeader(string(buf[:hsize])); err != nil {
			return Msg{}, err
		}
	}
	return m, nil
}

// readHeader parses "NATS/1.0[ status[ description]]\r\nK: V\r\n…\r\n".
func (m *Msg) readHeader(s string) error {
	lines := strings.Split(strings.TrimRight(s, "\r\n"), "\r\n")
	status, ok := strings.CutPrefix(lines[0], "NATS/1.0")
	if !ok {
		return fmt.Errorf("%w: header %q", ErrProtocol, lines[0])
	}
	if status = strings.TrimSpace(status); status != "" {
		code, desc, _ := strings.Cut(status, " ")
		n, err := strconv.Atoi(code)
		if err != nil {
			return fmt.Errorf("%w: status %q", ErrProtocol, status)
		}
		m.Status, m.Description = n, strings.TrimSpace(desc)
	}
	m.Header = Header{}
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		k = strings.TrimSpace(k)
		m.Header[k] = append(m.Header[k], strings.TrimSpace(v))
	}
	return nil
}
