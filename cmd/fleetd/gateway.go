package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/embeddednats"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/natsauth"
)

// GatewayConfig is everything one host's fleetd process runs with.
type GatewayConfig struct {
	Host string
	// NATS configures the embedded server; ignored when ExternalURL is set.
	NATS        embeddednats.Config
	ExternalURL string
	Creds       string
	Replicas    int
	HTTP        string
	Token       string
	HerdrPath   string
	NoHerdr     bool
	RolesFile   string
	Heartbeat   time.Duration
	Logger      *slog.Logger
}

// Gateway is one host's fleetd: the embedded server (or a connection to an
// external one), the event log, and the components wired over it. The e2e
// tests start it whole, on port 0 and a temp dir.
type Gateway struct {
	cfg GatewayConfig
	log *slog.Logger

	srv *embeddednats.Server
	nc  *nats.Conn
	js  jetstream.JetStream
	Log events.Log

	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once
}

// NewGateway returns a gateway that is not yet running.
func NewGateway(cfg GatewayConfig) *Gateway {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Heartbeat == 0 {
		cfg.Heartbeat = 5 * time.Second
	}
	return &Gateway{cfg: cfg, log: cfg.Logger}
}

// Start brings the gateway up and returns once it serves.
func (g *Gateway) Start(ctx context.Context) error {
	host := events.HostToken(g.cfg.Host)
	if err := events.ValidToken(host); err != nil {
		return err
	}
	g.cfg.Host = host
	if err := g.connect(ctx); err != nil {
		return err
	}
	replicas := g.cfg.Replicas
	if replicas == 0 {
		replicas = 1
	}
	if _, err := events.EnsureStream(ctx, g.js, events.StreamOptions{Replicas: replicas}); err != nil {
		g.shutdownNATS()
		return err
	}
	g.Log = events.New(g.js, events.Options{
		Source: "fleetd/" + host + "/gateway",
		OnSkip: func(subject string, seq uint64, err error) {
			g.log.Warn("skipped a message that is not a valid event", "subject", subject, "seq", seq, "err", err)
		},
	})
	runCtx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	if _, err := g.Log.Append(ctx, g.hostUp(false)); err != nil {
		cancel()
		g.shutdownNATS()
		return fmt.Errorf("announce host: %w", err)
	}
	g.wg.Add(1)
	go func() { defer g.wg.Done(); g.heartbeat(runCtx) }()
	return nil
}

func (g *Gateway) connect(ctx context.Context) error {
	var err error
	if g.cfg.ExternalURL != "" {
		opts := []nats.Option{nats.Name("fleetd " + g.cfg.Host), nats.MaxReconnects(-1)}
		if g.cfg.Creds != "" {
			o, err := natsauth.ConnectOption(g.cfg.Creds)
			if err != nil {
				return err
			}
			opts = append(opts, o)
		}
		g.nc, err = nats.Connect(g.cfg.ExternalURL, opts...)
		if err != nil {
			return fmt.Errorf("connect to %s: %w", g.cfg.ExternalURL, err)
		}
	} else {
		if err := os.MkdirAll(g.cfg.NATS.DataDir, 0o700); err != nil {
			return fmt.Errorf("data dir: %w", err)
		}
		g.srv, err = embeddednats.New(g.cfg.NATS)
		if err != nil {
			return err
		}
		if err := g.srv.Start(ctx); err != nil {
			return err
		}
		var opts []nats.Option
		if g.cfg.Creds != "" {
			// A server with fleetd auth wants credentials in-process too.
			o, err := natsauth.ConnectOption(g.cfg.Creds)
			if err != nil {
				g.srv.Close()
				return err
			}
			opts = append(opts, o)
		}
		g.nc, err = g.srv.Connect(opts...)
		if err != nil {
			g.srv.Close()
			return err
		}
	}
	g.js, err = jetstream.New(g.nc)
	return err
}

func (g *Gateway) hostUp(heartbeat bool) events.Event {
	return events.Event{Subject: g.cfg.Host, Data: events.HostUp{
		Host: g.cfg.Host, Version: version, NATSURL: g.NATSURL(), HTTPAddr: g.cfg.HTTP,
		DataDir: g.cfg.NATS.DataDir, PID: os.Getpid(), Heartbeat: heartbeat,
	}}
}

// heartbeat announces the host periodically so a federated roster can
// tell a silent host from a quiet one.
func (g *Gateway) heartbeat(ctx context.Context) {
	t := time.NewTicker(g.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := g.Log.Append(ctx, g.hostUp(true)); err != nil && ctx.Err() == nil {
				g.log.Warn("heartbeat", "err", err)
			}
		}
	}
}

// NATSURL is where `nats` can reach this gateway's server.
func (g *Gateway) NATSURL() string {
	if g.cfg.ExternalURL != "" {
		return g.cfg.ExternalURL
	}
	if g.srv != nil {
		return g.srv.ClientURL()
	}
	return ""
}

// Banner tells a person where things are.
func (g *Gateway) Banner() string {
	var b strings.Builder
	fmt.Fprintf(&b, "fleetd %s up on host %s\n", version, g.cfg.Host)
	if g.srv != nil {
		fmt.Fprintf(&b, "  data:   %s\n", g.cfg.NATS.DataDir)
	}
	if u := g.NATSURL(); u != "" {
		fmt.Fprintf(&b, "  nats:   %s\n", u)
		fmt.Fprintf(&b, "  tap:    nats --server %s sub 'fleet.>'\n", u)
		fmt.Fprintf(&b, "          nats --server %s stream view %s\n", u, events.Stream)
	} else {
		fmt.Fprintf(&b, "  nats:   in-process only (no listener)\n")
	}
	return b.String()
}

// Close announces the host down and stops everything. Idempotent.
func (g *Gateway) Close() error {
	var err error
	g.once.Do(func() {
		if g.cancel != nil {
			g.cancel()
		}
		g.wg.Wait()
		if g.Log != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, aerr := g.Log.Append(ctx, events.Event{Subject: g.cfg.Host, Data: events.HostDown{Host: g.cfg.Host, Reason: "shutdown"}})
			cancel()
			if aerr != nil {
				err = errors.Join(err, fmt.Errorf("announce host down: %w", aerr))
			}
		}
		g.shutdownNATS()
	})
	return err
}

func (g *Gateway) shutdownNATS() {
	if g.nc != nil {
		_ = g.nc.Drain()
		g.nc.Close()
	}
	if g.srv != nil {
		g.srv.Close()
	}
}
