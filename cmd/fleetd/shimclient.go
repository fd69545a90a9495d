package main

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/fleetd/fleetd/leadshim"
)

// Exit statuses of the client commands (send, turn, roster, sessions).
const (
	exitFailed      = 1 // the turn ended failed
	exitRefused     = 3 // the shim refused the request (4xx)
	exitTimeout     = 4 // the turn did not finish in time (504)
	exitUnavailable = 5 // the shim or NATS is unreachable (503, no connection)
)

// newShimClient is the client of --url; an https:// one is verified as
// --tls-ca and --tls-insecure say (checked by Globals.Validate).
func newShimClient(g *Globals) *leadshim.Client {
	var opts []leadshim.ClientOption
	if cfg, err := leadshim.ClientTLS(g.TLSCA, g.TLSInsecure); err == nil && cfg != nil {
		opts = append(opts, leadshim.WithTLS(cfg))
	}
	return leadshim.NewClient(g.URL, g.Token, opts...)
}

// exitFor maps a shim client error to the command's exit status.
func exitFor(err error) error {
	var ce *leadshim.ClientError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, leadshim.ErrUnreachable):
		return exitError{code: exitUnavailable, err: fmt.Errorf("%w (is 'fleetd up' running? set --url or FLEET_URL)", err)}
	case errors.As(err, &ce) && ce.Status == http.StatusGatewayTimeout:
		return exitError{code: exitTimeout, err: err}
	case errors.As(err, &ce) && ce.Status >= 500:
		return exitError{code: exitUnavailable, err: err}
	case errors.As(err, &ce):
		return exitError{code: exitRefused, err: err}
	}
	return err
}

// reattachHint tells a person how to pick a timed-out turn up again.
func reattachHint(id string) string {
	return fmt.Sprintf("turn %s is still open; re-attach with: fleetd send --wait %s   (or: fleetd turn %s --wait 10m)", id, id, id)
}
