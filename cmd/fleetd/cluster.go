package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/natsauth"
	"github.com/fleetd/fleetd/projections"
)

// provisionTimeout bounds the wait for a cluster's members to join and
// place the fabric's streams.
const provisionTimeout = 2 * time.Minute

// provisionAttempt bounds one create call. It is short on purpose: when
// several members create the same replicated stream at once, nats-server
// (2.15) answers none of them, although the stream is created; the retry
// then finds it at once (see clusterForming).
const provisionAttempt = 2 * time.Second

// provision creates or updates the FLEET stream and the projections' KV
// buckets, retrying while a cluster is still forming. Every gateway of a
// cluster starts at about the same time and provisions the same streams;
// members start in any order, and until every peer an R3 stream needs has
// joined, a create fails with "no suitable peers" or is never answered.
// The buckets are created here, before the projections open them, for the
// same reason: the projections' own create then finds them in place.
func (g *Gateway) provision(ctx context.Context, replicas int) error {
	ctx, cancel := context.WithTimeout(ctx, provisionTimeout)
	defer cancel()
	if err := g.retryForming(ctx, "stream "+events.Stream, func(ctx context.Context) error {
		_, err := events.EnsureStream(ctx, g.js, events.StreamOptions{Replicas: replicas})
		return err
	}); err != nil {
		return err
	}
	for _, cfg := range projections.BucketConfigs(projections.Options{Replicas: replicas}) {
		if err := g.retryForming(ctx, "bucket "+cfg.Bucket, func(ctx context.Context) error {
			_, err := g.js.CreateOrUpdateKeyValue(ctx, cfg)
			return err
		}); err != nil {
			return fmt.Errorf("ensure bucket %s: %w", cfg.Bucket, err)
		}
	}
	return nil
}

// retryForming calls create with a short deadline until it succeeds, fails
// for a reason other than a forming cluster, or ctx ends.
func (g *Gateway) retryForming(ctx context.Context, what string, create func(context.Context) error) error {
	for {
		actx, cancel := context.WithTimeout(ctx, provisionAttempt)
		err := create(actx)
		cancel()
		if err == nil || !clusterForming(err) || ctx.Err() != nil {
			return err
		}
		g.log.Info("waiting for the cluster", "create", what, "err", err)
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

// clusterForming reports whether err is what a JetStream API call returns
// while a cluster is still forming or has lost a peer: no suitable peers
// for placement (10005), temporarily unavailable (10008), no leader
// (10009), or no answer at all.
func clusterForming(err error) bool {
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

// paneCreds is what a pane of an agent gets for credentials when this
// process runs with creds: with a gateway's file from 'fleetd auth', the
// agent's own file beside it (none if it has none); any other file (a
// .creds of an external deployment) is passed on as it is.
func paneCreds(creds string) func(agent string) string {
	if creds == "" || !strings.HasPrefix(filepath.Base(creds), "gateway-") {
		return nil
	}
	return func(agent string) string { return natsauth.AgentCreds(creds, agent) }
}
