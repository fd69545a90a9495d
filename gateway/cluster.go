package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/natsauth"
)

// ProvisionTimeout bounds the wait for a cluster's members to join and
// place the fabric's streams.
const ProvisionTimeout = 2 * time.Minute

// provisionAttempt bounds one create call. It is short on purpose: when
// several members create the same replicated stream at once, nats-server
// (2.15) answers none of them, although the stream is created; the retry
// then finds it at once (see clusterForming).
const provisionAttempt = 2 * time.Second

// provision creates or updates the FLEET stream, the projections' KV
// buckets and the router's consumers, retrying while a cluster is still
// forming. Every gateway of a cluster starts at about the same time and
// provisions the same streams; members start in any order, and until
// every peer an R3 stream needs has joined, a create fails with "no
// suitable peers" or is never answered. The buckets are created here,
// before the projections open them, for the same reason.
//
// With AdminCreds the admin's key provisions, on a connection of its own.
// Without, the gateway's own identity tries; when NATS refuses it (a
// gateway key from 'fleetd auth' may not create streams), what exists is
// used as it is and what is missing is waited for: the admin provisions
// it with 'fleetd provision'.
func (g *Gateway) provision(ctx context.Context, replicas int) error {
	js, den := g.js, g.denials
	if g.cfg.AdminCreds != "" {
		ad := NewDenials(g.log)
		nc, err := g.dial("fleetd admin", g.cfg.AdminCreds, nats.ErrorHandler(ad.Handle))
		if err != nil {
			return fmt.Errorf("provision as %s: %w", g.cfg.AdminCreds, err)
		}
		if js, err = jetstream.New(nc); err != nil {
			nc.Close()
			return err
		}
		// Kept for what only the admin may do later: trim FLEET by the
		// retention policy, and create it again when it was lost.
		g.adminNC, g.adminJS, den = nc, js, ad
	}
	p := Provisioner{JS: js, Log: g.log, Denials: den, Replicas: replicas, Roles: g.Roles.Names()}
	fctx, cancel := context.WithTimeout(ctx, ProvisionTimeout)
	defer cancel()
	denied, err := p.run(fctx)
	// Only an identity that provisioned the buckets itself edits their
	// streams later (the views turn atomic batches on where they are
	// off); a refused one, or a gateway beside an admin key, keeps to
	// what exists.
	g.keepStreams = denied || g.cfg.AdminCreds != ""
	if !errors.Is(err, ErrNotProvisioned) || g.cfg.AdminCreds != "" {
		return err
	}
	return p.Await(ctx, g.NATSURL())
}

// retryForming calls create with a short deadline until it succeeds, fails
// for a reason other than a forming cluster, or ctx ends. An attempt NATS
// refuses for want of permission (reported to den) ends at once, with
// ErrDenied.
func retryForming(ctx context.Context, log *slog.Logger, den *Denials, what string, create func(context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, provisionAttempt)
		var refused atomic.Pointer[string]
		stop := den.watch(func(subject string) {
			refused.Store(&subject)
			cancel()
		})
		err := create(actx)
		stop()
		cancel()
		if s := refused.Load(); s != nil && err != nil {
			return fmt.Errorf("%s: %w: NATS refused %s", what, ErrDenied, *s)
		}
		if err == nil || !clusterForming(err) || ctx.Err() != nil {
			return err
		}
		log.Info("waiting for the cluster", "create", what, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// whileForming runs run again while it fails the way a forming or
// degraded cluster makes JetStream calls fail, instead of stopping the
// gateway: the projections open R3 buckets when they start.
func (g *Gateway) whileForming(run func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		for {
			err := run(ctx)
			if err == nil || !clusterForming(err) || ctx.Err() != nil {
				return err
			}
			g.log.Info("waiting for the cluster", "err", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(500 * time.Millisecond):
			}
		}
	}
}

// errJustCreated marks a stream that a create or update is making, or has
// just made, and that a lookup of it did not find.
var errJustCreated = errors.New("not found while being created")

// whileCreating says a stream that is not found while a create or update
// is making it is a cluster still forming: a server learns of a new
// stream from the meta leader a moment after the leader made it, and a
// lookup (nats.go's create-or-update asks first; batches are turned on
// after) can reach it in between. Seen as a gateway starting while its
// peers elected their first leader; it stopped the gateway.
func whileCreating(err error) error {
	if errors.Is(err, jetstream.ErrStreamNotFound) || errors.Is(err, jetstream.ErrBucketNotFound) {
		return fmt.Errorf("%w: %w", errJustCreated, err)
	}
	return err
}

// clusterForming reports whether err is what a JetStream API call returns
// while a cluster is still forming or has lost a peer: no suitable peers
// for placement (10005), temporarily unavailable (10008), no leader
// (10009), a stream not found while being created (whileCreating), or no
// answer at all.
func clusterForming(err error) bool {
	if errors.Is(err, errJustCreated) {
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case 10005, 10008, 10009:
			return true
		}
		return false
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, nats.ErrNoResponders) || errors.Is(err, jetstream.ErrJetStreamNotEnabled)
}

// PaneCreds is what a pane of an agent gets for credentials when this
// process runs with creds: with an admin's or a gateway's key from
// 'fleetd auth', the agent's own key from the agents directory beside it
// (none if it has none), never the process's own; any other file (a
// .creds of an external deployment) is passed on as it is.
func PaneCreds(creds string) func(agent string) string {
	if name := natsauth.IdentityName(creds); creds == "" || name == "" {
		return nil
	}
	return func(agent string) string { return natsauth.AgentCreds(creds, agent) }
}

// PaneToken is the NATS token a spawned pane's hooks get: the process's,
// when it runs without credentials (with credentials, a pane gets its
// agent's own key instead, or nothing).
func PaneToken(creds, token string) string {
	if creds != "" {
		return ""
	}
	return token
}

// streamAdmin is a JetStream handle that may administer FLEET (trim it,
// create it again): the admin key's with AdminCreds; the gateway's own when
// it runs without fleetd auth's keys (a token or no auth, which grant
// everything); nil when it runs with a gateway key alone, which may not.
func (g *Gateway) streamAdmin() jetstream.JetStream {
	switch {
	case g.adminJS != nil:
		return g.adminJS
	case g.cfg.Creds == "":
		return g.js
	}
	return nil
}
