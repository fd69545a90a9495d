package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/natsauth"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/roles"
	"github.com/fleetd/fleetd/router"
)

// ProvisionCmd creates the fabric's streams and consumers with an identity
// allowed to: under 'fleetd auth', only the admin may create, change or
// delete streams, and gateways wait until this has run.
type ProvisionCmd struct {
	Replicas int    `help:"Replicas of FLEET, the buckets and the router's consumers (default: 1, or 3 when the server is in a cluster)." env:"FLEET_REPLICAS"`
	Roles    string `help:"Roles file: the router's durable consumer is created for each role (default: the built-in roles)." env:"FLEET_ROLES" type:"path"`
}

// Run creates or updates FLEET, the projection buckets and the router's
// consumers, waiting while a cluster forms.
func (c *ProvisionCmd) Run(ctx context.Context, g *Globals) error {
	rc, err := roles.Load(c.Roles)
	if err != nil {
		return err
	}
	log := g.Logger()
	den := newDenials(log)
	nc, err := dialNATS(g, "fleetd provision", nats.ErrorHandler(den.handle))
	if err != nil {
		return exitError{code: exitUnavailable, err: err}
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	replicas := c.Replicas
	if replicas == 0 {
		replicas = 1
		if nc.ConnectedClusterName() != "" {
			replicas = 3
		}
	}
	p := provisioner{js: js, log: log, denials: den, replicas: replicas, roles: rc.Names(), strict: true}
	pctx, cancel := context.WithTimeout(ctx, provisionTimeout)
	defer cancel()
	if err := p.run(pctx); err != nil {
		if errors.Is(err, errDenied) {
			return fmt.Errorf("%w (provision with the admin's key: --creds <dir>/%s.nk from 'fleetd auth')", err, natsauth.AdminName)
		}
		return err
	}
	fmt.Fprintf(os.Stdout, "provisioned at %s (R%d): stream %s; buckets %s; consumers %s\n", nc.ConnectedUrlRedacted(), replicas,
		events.Stream, strings.Join(fabricBuckets, ", "), strings.Join(routerConsumers(rc.Names()), ", "))
	return nil
}

// fabricBuckets are the projections' buckets provisioning creates.
var fabricBuckets = projections.Buckets()

func routerConsumers(roleNames []string) []string {
	out := make([]string, len(roleNames))
	for i, r := range roleNames {
		out[i] = router.ConsumerName(r)
	}
	return out
}

// provisioner creates or updates the fabric: the FLEET stream, the
// projection buckets and a router durable consumer per role.
type provisioner struct {
	js       jetstream.JetStream
	log      *slog.Logger
	denials  *denials
	replicas int
	roles    []string
	// strict makes a refused create an error even when the stream
	// exists: 'fleetd provision' must not report what it did not do.
	strict bool
}

// run provisions everything, retrying while a cluster forms. A create
// NATS refuses (the identity may not) leaves an existing stream as it is;
// a missing one makes run return errNotProvisioned once it has tried the
// rest.
func (p provisioner) run(ctx context.Context) error {
	var missing []string
	denied := false // once refused, the identity is: only look at the rest
	ensure := func(what, stream string, create func(context.Context) error) error {
		if !denied {
			err := retryForming(ctx, p.log, p.denials, what, create)
			if err == nil || !errors.Is(err, errDenied) || p.strict {
				return err
			}
			p.log.Info("this identity may not provision the fabric; using what exists", "err", err)
			denied = true
		}
		serr := retryForming(ctx, p.log, nil, "look up "+stream, func(ctx context.Context) error {
			_, err := p.js.Stream(ctx, stream)
			return err
		})
		switch {
		case serr == nil:
			p.log.Debug("provisioned already; this identity may not change it", "stream", stream)
		case errors.Is(serr, jetstream.ErrStreamNotFound):
			missing = append(missing, what)
		default:
			return fmt.Errorf("%s: %w", what, serr)
		}
		return nil
	}
	if err := ensure("stream "+events.Stream, events.Stream, func(ctx context.Context) error {
		_, err := events.EnsureStream(ctx, p.js, events.StreamOptions{Replicas: p.replicas})
		return err
	}); err != nil {
		return err
	}
	for _, cfg := range projections.BucketConfigs(projections.Options{Replicas: p.replicas}) {
		if err := ensure("bucket "+cfg.Bucket, "KV_"+cfg.Bucket, func(ctx context.Context) error {
			_, err := p.js.CreateOrUpdateKeyValue(ctx, cfg)
			return err
		}); err != nil {
			return fmt.Errorf("ensure bucket %s: %w", cfg.Bucket, err)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s", errNotProvisioned, strings.Join(missing, ", "))
	}
	for _, role := range p.roles {
		cfg, err := router.ConsumerConfig(role, 0)
		if err != nil {
			return err
		}
		if err := retryForming(ctx, p.log, p.denials, "consumer "+cfg.Durable, func(ctx context.Context) error {
			_, err := p.js.CreateOrUpdateConsumer(ctx, events.Stream, cfg)
			return err
		}); err != nil && (p.strict || !errors.Is(err, errDenied)) {
			return fmt.Errorf("ensure consumer %s: %w", cfg.Durable, err)
		}
	}
	return nil
}

// await waits until FLEET and every bucket exist, saying now and then
// what is missing and how to provision it.
func (p provisioner) await(ctx context.Context, url string) error {
	streams := []string{events.Stream}
	for _, b := range fabricBuckets {
		streams = append(streams, "KV_"+b)
	}
	var said time.Time
	for {
		var missing []string
		for _, s := range streams {
			if _, err := p.js.Stream(ctx, s); err != nil {
				missing = append(missing, s)
			}
		}
		if len(missing) == 0 {
			p.log.Info("the fabric is provisioned")
			return nil
		}
		if time.Since(said) > 30*time.Second {
			said = time.Now()
			p.log.Warn("waiting for the fabric to be provisioned: this identity may not create streams",
				"missing", strings.Join(missing, ","),
				"how", fmt.Sprintf("fleetd provision --nats %s --creds <dir>/%s.nk (or start with --admin-creds)", url, natsauth.AdminName))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s", errNotProvisioned, strings.Join(missing, ", "))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// denials receives the asynchronous errors NATS reports to a connection.
// A permission violation is logged — the server's word on what an
// identity may not do — unless someone watches for it: provisioning
// learns from it that its identity may not create what it tried, without
// waiting for a request that is never answered.
type denials struct {
	log *slog.Logger

	mu       sync.Mutex
	next     int
	watchers map[int]func(subject string)
}

func newDenials(log *slog.Logger) *denials {
	return &denials{log: log, watchers: map[int]func(string){}}
}

var violationRE = regexp.MustCompile(`(?:Publish|Subscription) to "([^"]+)"`)

// handle is the connection's nats.ErrorHandler.
func (d *denials) handle(_ *nats.Conn, sub *nats.Subscription, err error) {
	m := violationRE.FindStringSubmatch(err.Error())
	if !errors.Is(err, nats.ErrPermissionViolation) || m == nil {
		d.log.Debug("nats", "err", err)
		return
	}
	d.mu.Lock()
	watched := len(d.watchers) > 0
	for _, fn := range d.watchers {
		fn(m[1])
	}
	d.mu.Unlock()
	if !watched {
		d.log.Warn("NATS refused a request for want of permission", "subject", m[1], "err", err)
	}
}

// watch calls fn with the subject of each violation until stop is called.
// A nil denials watches nothing.
func (d *denials) watch(fn func(subject string)) (stop func()) {
	if d == nil {
		return func() {}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	id := d.next
	d.next++
	d.watchers[id] = fn
	return func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		delete(d.watchers, id)
	}
}
