package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/fleetd/fleetd/leadshim"
)

// Exit statuses of the client commands (send, turn, roster, sessions).
const (
	exitFailed      = 1 // the turn ended failed
	exitRefused     = 3 // the shim refused the request (4xx)
	exitTimeout     = 4 // the turn did not finish in time (504)
	exitUnavailable = 5 // the shim or NATS is unreachable (503, no connection)
)

// shimClient talks to the lead HTTP shim at Globals.URL.
type shimClient struct {
	base  string
	token string
	hc    *http.Client
}

func newShimClient(g *Globals) shimClient {
	return shimClient{base: strings.TrimRight(g.URL, "/"), token: g.Token, hc: &http.Client{}}
}

// shimError is a non-2xx answer from the shim.
type shimError struct {
	Status int
	Body   leadshim.ErrorBody
}

func (e *shimError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.Status, e.Body.Code, e.Body.Message)
}

// do sends a request and decodes a 2xx answer into out. A non-2xx answer
// is a *shimError wrapped in an exitError with the matching status.
func (c shimClient) do(ctx context.Context, method, path string, in, out any) (int, error) {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return 0, err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return 0, fmt.Errorf("fleetd URL %q: %w", c.base, err)
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
			return 0, ctx.Err()
		}
		return 0, exitError{code: exitUnavailable, err: fmt.Errorf("reach fleetd at %s: %w (is 'fleetd up' running? set --url or FLEET_URL)", c.base, err)}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, fmt.Errorf("read answer: %w", err)
	}
	if res.StatusCode >= 300 {
		se := &shimError{Status: res.StatusCode}
		var e leadshim.Error
		if json.Unmarshal(raw, &e) == nil && e.Err.Code != "" {
			se.Body = e.Err
		} else {
			se.Body = leadshim.ErrorBody{Code: http.StatusText(res.StatusCode), Message: strings.TrimSpace(string(raw))}
		}
		code := exitRefused
		switch {
		case res.StatusCode == http.StatusGatewayTimeout:
			code = exitTimeout
		case res.StatusCode >= 500:
			code = exitUnavailable
		}
		return res.StatusCode, exitError{code: code, err: se}
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return res.StatusCode, fmt.Errorf("decode answer from %s: %w", path, err)
		}
	}
	return res.StatusCode, nil
}

// reattachHint tells a person how to pick a timed-out turn up again.
func reattachHint(id string) string {
	return fmt.Sprintf("turn %s is still open; re-attach with: fleetd send --wait %s   (or: fleetd turn %s --wait 10m)", id, id, id)
}

// timeoutID returns the turn id a 504 carries, if err is one.
func timeoutID(err error) (string, bool) {
	var se *shimError
	if errors.As(err, &se) && se.Status == http.StatusGatewayTimeout && se.Body.ID != "" {
		return se.Body.ID, true
	}
	return "", false
}

func turnPath(id, wait string) string {
	p := "/message/" + url.PathEscape(id)
	if wait != "" {
		p += "?wait=" + url.QueryEscape(wait)
	}
	return p
}
