package leadshim

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/fleetd/fleetd/projections"
)

// Client calls a lead shim over HTTP: what `fleetd send`, `roster` and the
// other client commands use, and what any Go program driving a fleet can.
// It is safe for concurrent use.
type Client struct {
	base  string
	token string
	hc    *http.Client
}

// NewClient returns a client for the shim at base (http://host:port, or
// https:// for a shim serving TLS), sending token as the bearer token when
// it is not empty.
func NewClient(base, token string, opts ...ClientOption) *Client {
	c := &Client{base: strings.TrimRight(base, "/"), token: token, hc: &http.Client{}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// ClientOption sets up a Client.
type ClientOption func(*Client)

// WithTLS has the client verify an https:// shim with cfg (its RootCAs,
// say, for a shim whose certificate no system CA signed).
func WithTLS(cfg *tls.Config) ClientOption {
	return func(c *Client) {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.TLSClientConfig = cfg
		c.hc = &http.Client{Transport: t}
	}
}

// ClientTLS is the TLS config a client of an https:// shim uses: the
// system's CAs, or those of the PEM file caFile (a self-signed shim's
// own certificate will do); insecure skips verification altogether,
// which leaves the token to whoever sits on the path. Nil when neither
// is asked for.
func ClientTLS(caFile string, insecure bool) (*tls.Config, error) {
	if caFile == "" && !insecure {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: insecure}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("shim CA: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("shim CA %s: no PEM certificate in it", caFile)
		}
		cfg.RootCAs = pool
	}
	return cfg, nil
}

// ClientError is a non-2xx answer from the shim.
type ClientError struct {
	Status int
	Body   ErrorBody
}

func (e *ClientError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, e.Body.Code, e.Body.Message)
}

// TimedOut returns the id of the turn a 504 from the shim carries, when
// err is one: the turn goes on, and a caller re-attaches to it by id.
func TimedOut(err error) (turnID string, ok bool) {
	var ce *ClientError
	if errors.As(err, &ce) && ce.Status == http.StatusGatewayTimeout && ce.Body.ID != "" {
		return ce.Body.ID, true
	}
	return "", false
}

// ErrUnreachable means no shim answered at the client's address.
var ErrUnreachable = errors.New("fleetd unreachable")

// Send sends a turn and waits for its end (m.Wait unset or true): the
// reply envelope. A failed turn is an envelope too; a refusal or a timeout
// is a *ClientError (a 504 carries the turn id to re-attach).
func (c *Client) Send(ctx context.Context, m Message) (Envelope, error) {
	var env Envelope
	err := c.Do(ctx, http.MethodPost, "/message", m, &env)
	return env, err
}

// SendAsync queues a turn without waiting (it sets m.Wait false) and
// returns its id.
func (c *Client) SendAsync(ctx context.Context, m Message) (Accepted, error) {
	wait := false
	m.Wait = &wait
	var acc Accepted
	err := c.Do(ctx, http.MethodPost, "/message", m, &acc)
	return acc, err
}

// Turn reads a turn, long-polling up to wait (0: answer at once) until it
// is final.
func (c *Client) Turn(ctx context.Context, id, wait string) (Envelope, error) {
	var env Envelope
	err := c.Do(ctx, http.MethodGet, longPoll("/message/"+url.PathEscape(id), wait), nil, &env)
	return env, err
}

// longPoll is path with the ?wait= that has the shim hold its answer up
// to wait while the turn or job is not final; path itself when wait is
// empty.
func longPoll(path, wait string) string {
	if wait == "" {
		return path
	}
	return path + "?wait=" + url.QueryEscape(wait)
}

// Roster lists the fleet's agents.
func (c *Client) Roster(ctx context.Context) ([]projections.Agent, error) {
	var agents []projections.Agent
	err := c.Do(ctx, http.MethodGet, "/roster", nil, &agents)
	return agents, err
}

// Sessions lists the named sessions.
func (c *Client) Sessions(ctx context.Context) ([]projections.Session, error) {
	var sessions []projections.Session
	err := c.Do(ctx, http.MethodGet, "/sessions", nil, &sessions)
	return sessions, err
}

// Health reads /healthz: ok, degraded (with the reasons) or, as a
// *ClientError with status 503, unavailable.
func (c *Client) Health(ctx context.Context) (Health, error) {
	var h Health
	err := c.Do(ctx, http.MethodGet, "/healthz", nil, &h)
	return h, err
}

// Roles lists the roles with their agents and load.
func (c *Client) Roles(ctx context.Context) ([]RoleState, error) {
	var roles []RoleState
	err := c.Do(ctx, http.MethodGet, "/roles", nil, &roles)
	return roles, err
}

// Do sends a request with in as its JSON body (nil: none) and decodes a
// 2xx answer into out (nil: discarded). A non-2xx answer is a
// *ClientError; no answer at all wraps ErrUnreachable.
func (c *Client) Do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return fmt.Errorf("fleetd URL %q: %w", c.base, err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	res, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("%w at %s: %w", ErrUnreachable, c.base, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return fmt.Errorf("read answer: %w", err)
	}
	if res.StatusCode >= 300 {
		ce := &ClientError{Status: res.StatusCode}
		var e Error
		if json.Unmarshal(raw, &e) == nil && e.Err.Code != "" {
			ce.Body = e.Err
		} else {
			ce.Body = ErrorBody{Code: http.StatusText(res.StatusCode), Message: strings.TrimSpace(string(raw))}
		}
		return ce
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("decode answer from %s: %w", path, err)
		}
	}
	return nil
}
