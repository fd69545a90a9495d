package projections_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/embeddednats/natstest"
	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/lifecycle"
	"github.com/fleetd/fleetd/projections"
)

type env struct {
	srv *natstest.Server
	js  jetstream.JetStream
	log events.Log
}

func newEnv(t testing.TB) *env {
	t.Helper()
	srv, log := fleettest.StartLog(t, events.Options{Source: "fleetd/test/projections"})
	return &env{srv: srv, js: srv.JS, log: log}
}

// running is a projector whose Run goroutine the test owns.
type running struct {
	projections.Projector
	done chan error
	once sync.Once
	err  error
}

// start runs p until the test ends and waits until it is ready.
func start(t testing.TB, p projections.Projector) *running {
	t.Helper()
	r := &running{Projector: p, done: make(chan error, 1)}
	go func() { r.done <- p.Run(context.Background()) }()
	t.Cleanup(func() { _ = r.stop() })
	select {
	case <-p.Ready():
	case err := <-r.done:
		t.Fatalf("run ended before ready: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("projector not ready")
	}
	return r
}

// stop closes the projector and returns Run's error.
func (r *running) stop() error {
	r.once.Do(func() {
		r.Close()
		r.err = <-r.done
	})
	return r.err
}

func (e *env) append(t testing.TB, ev events.Event) events.Ack {
	t.Helper()
	ack, err := e.log.Append(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	return ack
}

func waitSeq(t testing.TB, p projections.Views, seq uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.WaitSeq(ctx, seq); err != nil {
		t.Fatalf("wait for seq %d (applied %d): %v", seq, p.Applied(), err)
	}
}

// kvAll reads every entry of a bucket, decoded as T, by key.
func kvAll[T any](t testing.TB, js jetstream.JetStream, bucket string) map[string]T {
	t.Helper()
	ctx := context.Background()
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		t.Fatalf("bucket %s: %v", bucket, err)
	}
	out := map[string]T{}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for k := range keys.Keys() {
		e, err := kv.Get(ctx, k)
		if err != nil {
			t.Fatalf("get %s/%s: %v", bucket, k, err)
		}
		var v T
		if err := json.Unmarshal(e.Value(), &v); err != nil {
			t.Fatalf("decode %s/%s: %v", bucket, k, err)
		}
		out[k] = v
	}
	return out
}

func kvGet[T any](js jetstream.JetStream, bucket, key string) (T, error) {
	var v T
	ctx := context.Background()
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return v, err
	}
	e, err := kv.Get(ctx, projections.Key(key))
	if err != nil {
		return v, fmt.Errorf("get %s/%s: %w", bucket, key, err)
	}
	return v, json.Unmarshal(e.Value(), &v)
}

// view is everything a projection shows, for deep comparison.
type view struct {
	Roster   map[string]projections.Agent
	Sessions map[string]projections.Session
	Turns    map[string]lifecycle.Turn
}

// memView reads a projector's state through Views; turns are the ids the
// given turns bucket lists, each read with Turn.
func memView(t testing.TB, p projections.Views, turnIDs []string) view {
	t.Helper()
	v := view{Roster: map[string]projections.Agent{}, Sessions: map[string]projections.Session{}, Turns: map[string]lifecycle.Turn{}}
	for _, a := range p.Roster() {
		v.Roster[a.Agent] = *a
	}
	for _, s := range p.Sessions() {
		v.Sessions[projections.Key(s.Name)] = s
	}
	for _, id := range turnIDs {
		tu, ok, err := p.Turn(context.Background(), id)
		if err != nil || !ok {
			t.Fatalf("turn %s: ok=%v err=%v", id, ok, err)
		}
		v.Turns[id] = tu
	}
	return v
}

func kvView(t testing.TB, js jetstream.JetStream, prefix string) view {
	t.Helper()
	return view{
		Roster:   kvAll[projections.Agent](t, js, prefix+"roster"),
		Sessions: kvAll[projections.Session](t, js, prefix+"sessions"),
		Turns:    kvAll[lifecycle.Turn](t, js, prefix+"turns"),
	}
}

func (v view) turnIDs() []string {
	ids := make([]string, 0, len(v.Turns))
	for id := range v.Turns {
		ids = append(ids, id)
	}
	return ids
}

// diff describes the first differences between two views, or nil.
func diff(name string, got, want view) error {
	var errs []error
	cmp := func(kind string, g, w any) {
		gv, wv := reflect.ValueOf(g), reflect.ValueOf(w)
		if gv.Len() != wv.Len() {
			errs = append(errs, fmt.Errorf("%s: %s: %d entries, want %d", name, kind, gv.Len(), wv.Len()))
		}
		for _, k := range wv.MapKeys() {
			ge := gv.MapIndex(k)
			if !ge.IsValid() {
				errs = append(errs, fmt.Errorf("%s: %s %v missing", name, kind, k))
			} else if !reflect.DeepEqual(normalize(ge.Interface()), normalize(wv.MapIndex(k).Interface())) {
				errs = append(errs, fmt.Errorf("%s: %s %v:\n got %+v\nwant %+v", name, kind, k, ge.Interface(), wv.MapIndex(k).Interface()))
			}
			if len(errs) > 5 {
				break
			}
		}
	}
	cmp("agent", got.Roster, want.Roster)
	cmp("session", got.Sessions, want.Sessions)
	cmp("turn", got.Turns, want.Turns)
	return errors.Join(errs...)
}

// normalize compares through JSON, as the KV holds it (times lose their
// monotonic reading and location).
func normalize(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}

func jetstreamNew(nc *nats.Conn) (jetstream.JetStream, error) { return jetstream.New(nc) }
