package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/natsauth"
	"github.com/fleetd/fleetd/projections"
	"github.com/fleetd/fleetd/router"
)

// FabricBuckets are the projections' buckets provisioning creates.
var FabricBuckets = projections.Buckets()

func RouterConsumers(roleNames []string) []string {
	out := make([]string, len(roleNames))
	for i, r := range roleNames {
		out[i] = router.ConsumerName(r)
	}
	return out
}

// Provisioner creates or updates the fabric: the FLEET stream, the
// projection buckets and a router durable consumer per role.
type Provisioner struct {
	JS       jetstream.JetStream
	Log      *slog.Logger
	Denials  *Denials
	Replicas int
	Roles    []string
	// Strict makes a refused create an error even when the stream
	// exists: 'fleetd provision' must not report what it did not do.
	Strict bool
}

// Run provisions everything, retrying while a cluster forms. A create
// NATS refuses (the identity may not) leaves an existing stream as it is;
// a missing one makes run return ErrNotProvisioned once it has tried the
// rest.
func (p Provisioner) Run(ctx context.Context) error {
	_, err := p.run(ctx)
	return err
}

// run is Run, and says whether NATS refused this identity a create.
func (p Provisioner) run(ctx context.Context) (denied bool, err error) {
	var missing []string
	ensure := func(what, stream string, create func(context.Context) error) error {
		if !denied {
			err := retryForming(ctx, p.Log, p.Denials, what, create)
			if err == nil || !errors.Is(err, ErrDenied) || p.Strict {
				return err
			}
			p.Log.Info("this identity may not provision the fabric; using what exists", "err", err)
			denied = true
		}
		serr := retryForming(ctx, p.Log, nil, "look up "+stream, func(ctx context.Context) error {
			_, err := p.JS.Stream(ctx, stream)
			return err
		})
		switch {
		case serr == nil:
			p.Log.Debug("provisioned already; this identity may not change it", "stream", stream)
		case errors.Is(serr, jetstream.ErrStreamNotFound):
			missing = append(missing, what)
		default:
			return fmt.Errorf("%s: %w", what, serr)
		}
		return nil
	}
	if err := ensure("stream "+events.Stream, events.Stream, func(ctx context.Context) error {
		_, err := events.EnsureStream(ctx, p.JS, events.StreamOptions{Replicas: p.Replicas})
		return whileCreating(err)
	}); err != nil {
		return denied, err
	}
	for _, cfg := range projections.BucketConfigs(projections.Options{Replicas: p.Replicas}) {
		if err := ensure("bucket "+cfg.Bucket, "KV_"+cfg.Bucket, func(ctx context.Context) error {
			if _, err := p.JS.CreateOrUpdateKeyValue(ctx, cfg); err != nil {
				return whileCreating(err)
			}
			// A KV update writes the stream's config without atomic
			// batches: allow them again, for the views' large flushes.
			_, err := projections.AllowBatchWrites(ctx, p.JS, cfg.Bucket)
			return whileCreating(err)
		}); err != nil {
			return denied, fmt.Errorf("ensure bucket %s: %w", cfg.Bucket, err)
		}
	}
	if len(missing) > 0 {
		return denied, fmt.Errorf("%w: %s", ErrNotProvisioned, strings.Join(missing, ", "))
	}
	for _, role := range p.Roles {
		cfg, err := router.ConsumerConfig(role, 0)
		if err != nil {
			return denied, err
		}
		if err := retryForming(ctx, p.Log, p.Denials, "consumer "+cfg.Durable, func(ctx context.Context) error {
			// FLEET exists by now: not finding it is the same moment as a
			// stream's own create.
			_, err := p.JS.CreateOrUpdateConsumer(ctx, events.Stream, cfg)
			return whileCreating(err)
		}); err != nil && (p.Strict || !errors.Is(err, ErrDenied)) {
			return denied, fmt.Errorf("ensure consumer %s: %w", cfg.Durable, err)
		}
	}
	return denied, nil
}

// Await waits until FLEET and every bucket exist, saying now and then
// what is missing and how to provision it.
func (p Provisioner) Await(ctx context.Context, url string) error {
	streams := []string{events.Stream}
	for _, b := range FabricBuckets {
		streams = append(streams, "KV_"+b)
	}
	var said time.Time
	for {
		var missing []string
		for _, s := range streams {
			if _, err := p.JS.Stream(ctx, s); err != nil {
				missing = append(missing, s)
			}
		}
		if len(missing) == 0 {
			p.Log.Info("the fabric is provisioned")
			return nil
		}
		if time.Since(said) > 30*time.Second {
			said = time.Now()
			p.Log.Warn("waiting for the fabric to be provisioned: this identity may not create streams",
				"missing", strings.Join(missing, ","),
				"how", fmt.Sprintf("fleetd provision --nats %s --creds <dir>/%s.nk (or start with --admin-creds)", url, natsauth.AdminName))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w: %s", ErrNotProvisioned, strings.Join(missing, ", "))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// Denials receives the asynchronous errors NATS reports to a connection.
// A permission violation is logged — the server's word on what an
// identity may not do — unless someone watches for it: provisioning
// learns from it that its identity may not create what it tried, without
// waiting for a request that is never answered.
type Denials struct {
	log *slog.Logger

	mu       sync.Mutex
	next     int
	watchers map[int]func(subject string)
}

// NewDenials returns a Denials that logs to log; install its Handle as
// the connection's error handler.
func NewDenials(log *slog.Logger) *Denials {
	return &Denials{log: log, watchers: map[int]func(string){}}
}

// Compiled on first use, not as every fleetd process (each hook run) starts.
var violationRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:Publish|Subscription) to "([^"]+)"`) })

// handle is the connection's nats.ErrorHandler.
func (d *Denials) Handle(_ *nats.Conn, sub *nats.Subscription, err error) {
	m := violationRE().FindStringSubmatch(err.Error())
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
func (d *Denials) watch(fn func(subject string)) (stop func()) {
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

// ProvisionAs is 'fleetd provision': p run over nc, as nc's identity
// (den is nc's error handler, which hears the refusals), strictly — a
// refusal is an error that names the admin's key, not "what exists will
// do" — and within ProvisionTimeout. Replicas 0 is 1, or 3 when nc's
// server is in a cluster. It writes what it provisioned to w.
func ProvisionAs(ctx context.Context, nc *nats.Conn, den *Denials, p Provisioner, w io.Writer) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	p.JS, p.Denials, p.Strict = js, den, true
	if p.Replicas == 0 {
		p.Replicas = 1
		if nc.ConnectedClusterName() != "" {
			p.Replicas = 3
		}
	}
	pctx, cancel := context.WithTimeout(ctx, ProvisionTimeout)
	defer cancel()
	if err := p.Run(pctx); err != nil {
		if errors.Is(err, ErrDenied) {
			return fmt.Errorf("%w (provision with the admin's key: --creds <dir>/%s.nk from 'fleetd auth')", err, natsauth.AdminName)
		}
		return err
	}
	_, err = fmt.Fprintf(w, "provisioned at %s (R%d): stream %s; buckets %s; consumers %s\n", nc.ConnectedUrlRedacted(), p.Replicas,
		events.Stream, strings.Join(FabricBuckets, ", "), strings.Join(RouterConsumers(p.Roles), ", "))
	return err
}
