package projections

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/fleetd/fleetd/lifecycle"
)

// Compiled on first use, not as every fleetd process (each hook run) starts.
var (
	bucketRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9_-]+$`) })
)

// encodedPrefix marks a KV key that is the base64url form of a name that
// cannot be a key as it is (a session name with spaces, say).
const encodedPrefix = "_b64_"

// Key is the KV key an agent id, session name or turn id is stored under:
// the name itself when it is a valid key, else encodedPrefix + its
// base64url form.
func Key(name string) string {
	if validKey(name) && !strings.HasPrefix(name, encodedPrefix) {
		return name
	}
	return encodedPrefix + base64.RawURLEncoding.EncodeToString([]byte(name))
}

// validKey reports whether name is a KV key as it is: dot-separated
// tokens of letters, digits and -/_= (what jetstream's KV accepts,
// `^[-/_=a-zA-Z0-9]+(\.[-/_=a-zA-Z0-9]+)*$`). Written out, not a regexp:
// a rebuild asks it of every turn it writes, and the regexp was a
// hundredth of the rebuild's CPU (TestValidKeyIsTheRegexp holds the two
// equal).
func validKey(name string) bool {
	dot := true // at the start, as after a dot: a token must follow
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case c == '.':
			if dot {
				return false
			}
			dot = true
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '/', c == '_', c == '=':
			dot = false
		default:
			return false
		}
	}
	return !dot
}

// Bucket names under the contract's prefix, named once here for everyone
// who reads, grants or provisions them. BucketRoster holds one Agent per
// key, BucketSessions one Session, BucketTurns one lifecycle.Turn.
const (
	BucketRoster      = "fleet_roster"
	BucketSessions    = "fleet_sessions"
	BucketTurns       = "fleet_turns"
	BucketCheckpoints = "fleet_checkpoints"
	// CheckpointKey is the checkpoint's head key in the checkpoints bucket;
	// its chunks live under CheckpointKey.<slot>.<n>.
	CheckpointKey = "projections"
)

// Buckets lists the projection's buckets under the contract's prefix:
// what provisioning creates and a gateway's credentials may read and
// write (natsauth).
func Buckets() []string {
	return []string{BucketRoster, BucketSessions, BucketTurns, BucketCheckpoints}
}

// RosterGetSubject is the JetStream direct-get request for agent's roster
// row: the one read of the roster an agent's credentials allow (natsauth)
// and the one its hook makes (claudehook.CurrentTurn), answered with the
// row's Agent JSON in one round trip, without opening the bucket.
func RosterGetSubject(agent string) string {
	return "$JS.API.DIRECT.GET.KV_" + BucketRoster + ".$KV." + BucketRoster + "." + Key(agent)
}

type buckets struct {
	roster, sessions, turns, checkpoints jetstream.KeyValue
	// batched are the buckets whose streams take atomic batches.
	batched map[string]bool
	// nc asks a bucket's stream leader when a direct get goes unanswered.
	nc *nats.Conn
}

func bucketNames(o Options) [4]string {
	p := o.BucketPrefix
	return [4]string{p + "roster", p + "sessions", p + "turns", p + "checkpoints"}
}

// markerTTL is how long the turns bucket keeps the marker of a turn whose
// TTL ran out. Setting it is what allows per-key TTLs in the bucket; it
// is set whatever TurnTTL is, because once allowed they cannot be
// disallowed again, and the bucket's configuration must not change with
// a flag.
const markerTTL = time.Minute

// BucketConfigs are the projection's KV buckets as o configures them:
// roster, sessions, turns (which allows per-key TTLs, for TurnTTL) and
// checkpoints. Whoever creates the buckets ahead of the projection (a
// cluster's provisioning) must use these, so the two never disagree.
func BucketConfigs(o Options) []jetstream.KeyValueConfig {
	o.setDefaults()
	names := bucketNames(o)
	out := make([]jetstream.KeyValueConfig, len(names))
	for i, name := range names {
		out[i] = jetstream.KeyValueConfig{
			Bucket: name, Description: "fleetd projection", History: 1,
			Storage: jetstream.FileStorage, Replicas: o.Replicas,
		}
	}
	out[2].LimitMarkerTTL = markerTTL
	return out
}

// ensureBuckets opens the buckets, creating those that do not exist yet.
// A bucket that exists is used as it is: whoever provisioned it (fleetd
// up, or the admin's fleetd provision under fleetd auth) chose its
// replicas, and a gateway's credentials may not change a stream — except
// that an older turns bucket gains per-key TTLs (for TurnTTL) when this
// identity may update it.
func ensureBuckets(ctx context.Context, js jetstream.JetStream, o Options) (*buckets, error) {
	ctx, cancel := withTimeout(ctx, o.Timeout)
	defer cancel()
	var kvs [4]jetstream.KeyValue
	for i, cfg := range BucketConfigs(o) {
		kv, err := js.KeyValue(ctx, cfg.Bucket)
		switch {
		case errors.Is(err, jetstream.ErrBucketNotFound):
			kv, err = js.CreateKeyValue(ctx, cfg)
			if errors.Is(err, jetstream.ErrBucketExists) {
				kv, err = js.KeyValue(ctx, cfg.Bucket) // created meanwhile
			}
		case err == nil && cfg.LimitMarkerTTL > 0:
			if st, serr := kv.Status(ctx); serr == nil && st.LimitMarkerTTL() == 0 {
				if up, uerr := js.UpdateKeyValue(ctx, cfg); uerr == nil {
					kv = up
				}
			}
		}
		if err != nil {
			return nil, fmt.Errorf("ensure bucket %s: %w", cfg.Bucket, err)
		}
		kvs[i] = kv
	}
	b := &buckets{roster: kvs[0], sessions: kvs[1], turns: kvs[2], checkpoints: kvs[3], batched: map[string]bool{}, nc: js.Conn()}
	for _, kv := range kvs {
		if !o.BatchWrites {
			break
		}
		ok, err := batchWrites(ctx, js, kv.Bucket(), !o.KeepStreams)
		if err != nil {
			o.Logger.Debug("projections: view writes go one by one", "bucket", kv.Bucket(), "err", err)
		}
		b.batched[kv.Bucket()] = ok
	}
	return b, nil
}

// probe looks, once, for the buckets a memory fold may read: the turns
// bucket (final turns it no longer holds) and the checkpoints (where to
// start). Both or neither: a checkpoint without the turns it left to KV
// would lose them. Nothing found is not an error; the fold then starts
// from the log's beginning and answers from memory alone.
func (m *materializer) probe(ctx context.Context) {
	if m.probed || m.js == nil {
		return
	}
	m.probed = true
	// A short bound: an identity without the rights may not get a quick
	// answer, and the fold can do without.
	ctx, cancel := withTimeout(ctx, min(m.o.Timeout, 2*time.Second))
	defer cancel()
	names := bucketNames(m.o)
	turns, err := m.js.KeyValue(ctx, names[2])
	var ckpts jetstream.KeyValue
	if err == nil {
		ckpts, err = m.js.KeyValue(ctx, names[3])
	}
	if err != nil {
		m.o.Logger.Debug("projections: memory fold reads no buckets", "err", err)
		return
	}
	m.kvb.Store(&buckets{turns: turns, checkpoints: ckpts, nc: m.js.Conn()})
}

// dropBuckets deletes the projection's buckets named by which (indexes
// into bucketNames; all when empty), for a rebuild.
func dropBuckets(ctx context.Context, js jetstream.JetStream, o Options, which ...int) error {
	ctx, cancel := withTimeout(ctx, o.Timeout)
	defer cancel()
	names := bucketNames(o)
	if len(which) > 0 {
		var some []string
		for _, i := range which {
			some = append(some, names[i])
		}
		names = [4]string{}
		copy(names[:], some)
	}
	for _, name := range names {
		if name == "" {
			continue
		}
		if err := js.DeleteKeyValue(ctx, name); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
			return fmt.Errorf("drop bucket %s: %w", name, err)
		}
	}
	return nil
}

// get reads and decodes one entry; false when there is none.
func (b *buckets) get(ctx context.Context, kv jetstream.KeyValue, name string, v any, timeout time.Duration) (bool, error) {
	ctx, cancel := withTimeout(ctx, timeout)
	defer cancel()
	value, ok, err := b.latest(ctx, kv, Key(name))
	if err != nil {
		return false, fmt.Errorf("get %s/%s: %w", kv.Bucket(), name, err)
	}
	if !ok {
		return false, nil
	}
	if err := decode(value, v); err != nil {
		return false, fmt.Errorf("decode %s/%s: %w", kv.Bucket(), name, err)
	}
	return true, nil
}

// directWait is how long a direct get may go unanswered before the
// stream's leader is asked instead.
const directWait = time.Second

// latest reads key's value in kv; false when there is none (never
// written, deleted, expired). It asks with a direct get first, which any
// replica of the bucket answers, the nearest first. A replica whose
// process stopped without closing its connections (frozen, swapped out)
// keeps its share of the direct gets until its routes time out, minutes
// later, and answers none: a fold that read a turn there waited out
// every try, and its whole gateway's views stood still (seen in a
// three-host test with one host stopped). After directWait the get goes
// to the stream's leader, which a cluster elects among the live members.
func (b *buckets) latest(ctx context.Context, kv jetstream.KeyValue, key string) ([]byte, bool, error) {
	dctx, cancel := context.WithTimeout(ctx, directWait)
	e, err := kv.Get(dctx, key)
	cancel()
	switch {
	case err == nil:
		return e.Value(), true, nil
	case isNotFound(err):
		return nil, false, nil
	case ctx.Err() != nil || b.nc == nil:
		return nil, false, err
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout), errors.Is(err, nats.ErrNoResponders):
		return leaderGet(ctx, b.nc, kv.Bucket(), key)
	}
	return nil, false, err
}

// leaderGet is JetStream's message get ($JS.API.STREAM.MSG.GET), answered
// by the stream's leader, of key's last message in bucket.
func leaderGet(ctx context.Context, nc *nats.Conn, bucket, key string) ([]byte, bool, error) {
	stream, subject := "KV_"+bucket, "$KV."+bucket+"."+key
	req, _ := json.Marshal(struct {
		LastBySubject string `json:"last_by_subj"`
	}{subject})
	msg, err := nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET."+stream, req)
	if err != nil {
		return nil, false, fmt.Errorf("from the stream leader: %w", err)
	}
	var resp struct {
		Message *struct {
			Header []byte `json:"hdrs"`
			Data   []byte `json:"data"`
		} `json:"message"`
		Error *struct {
			Code        int    `json:"code"`
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, false, fmt.Errorf("from the stream leader: %w", err)
	}
	switch {
	case resp.Error != nil && resp.Error.ErrCode == msgNotFound:
		return nil, false, nil
	case resp.Error != nil:
		return nil, false, fmt.Errorf("from the stream leader: %s (%d)", resp.Error.Description, resp.Error.ErrCode)
	case resp.Message == nil:
		return nil, false, errors.New("from the stream leader: no message in the answer")
	}
	// A delete, a purge or an expiry leaves a marker with no value, as
	// jetstream's kv.Get reads them.
	if h := string(resp.Message.Header); strings.Contains(h, "KV-Operation:") || strings.Contains(h, jetstream.MarkerReasonHeader+":") {
		return nil, false, nil
	}
	return resp.Message.Data, true, nil
}

// msgNotFound is JetStream's "no message found" (JSNoMessageFoundErr).
const msgNotFound = 10037

// put is one pending KV write; ttl, when set, expires the entry.
type put struct {
	bucket, name string
	data         []byte
	ttl          time.Duration
	// view says which dirty set a failed put goes back to. A closure per
	// put, capturing a turn by value, was a quarter of what a rebuild's
	// fold allocated.
	view viewKind
}

// viewKind is the view a put writes; the checkpoint's chunks have none.
type viewKind uint8

const (
	viewNone viewKind = iota
	viewAgent
	viewSession
	viewTurn
)

// retry marks p's entry changed again, for the next flush; written is
// its flush's turns, where a turn's put finds the turn it wrote.
func (m *materializer) retry(p put, written map[string]lifecycle.Turn) {
	switch p.view {
	case viewAgent:
		m.dirty.agents[p.name] = struct{}{}
	case viewSession:
		m.dirty.sessions[p.name] = struct{}{}
	case viewTurn:
		if _, newer := m.dirty.turns[p.name]; !newer {
			if t, ok := written[p.name]; ok {
				m.dirty.turn(t)
			}
		}
	}
}

// flush writes every changed entry, then the checkpoint when one is due
// (or force). Entries that fail to write stay changed for the next flush;
// the checkpoint is only written once every entry before it is. It is
// prepare, do and finish in a row; the live fold runs do off its own
// goroutine (see follow).
func (m *materializer) flush(ctx context.Context, force bool) error {
	// Nothing folds until this returns, so the state holds still: the
	// checkpoint (megabytes of JSON with a thousand agents) is encoded
	// on a goroutine of its own while the entries are encoded and
	// written, as they go first anyway. The last flush of a rebuild
	// (every agent's and session's row, then the checkpoint) was a sixth
	// to a fifth of it, and waited on nothing else.
	if m.ckptWanted(force) {
		snap := m.snapshot()
		done := make(chan encodedResult, 1)
		go func() {
			c, err := encodeSnapshot(snap, 1-m.slot)
			done <- encodedResult{c, err}
		}()
		puts, turns, err := m.collect(true)
		if err != nil {
			<-done
			return err
		}
		return m.finishFlush(m.do(ctx, flushJob{puts: puts, turns: turns, encoding: done}))
	}
	job, ok, err := m.prepare(force)
	if err != nil || !ok {
		return err
	}
	return m.finishFlush(m.do(ctx, job))
}

// flushJob is a flush's writes, encoded on the fold's goroutine from the
// state as of one position: the changed entries and, when due, the
// checkpoint of that position.
type flushJob struct {
	puts  []put
	turns map[string]lifecycle.Turn // the turns the puts write, by id
	ckpt  *encodedCheckpoint
	// encoding, when set, delivers the checkpoint still being encoded
	// (flush): do takes it after the entries are written.
	encoding <-chan encodedResult
}

// encodedResult is a checkpoint encoded off the fold's goroutine.
type encodedResult struct {
	ckpt *encodedCheckpoint
	err  error
}

// flushResult is what came of a flushJob: the writes that failed (to be
// marked changed again) and whether the checkpoint was written.
type flushResult struct {
	failed []put
	turns  map[string]lifecycle.Turn // the job's, for a failed turn's retry
	err    error
	ckpt   *encodedCheckpoint // written; nil when none was or it failed
}

// prepare takes the changed entries out of the dirty set and encodes
// them, with the checkpoint when one is due; ok is false when there is
// nothing to write. It runs on the fold's goroutine: it reads the state
// without the lock, as only that goroutine changes it.
func (m *materializer) prepare(force bool) (flushJob, bool, error) {
	if m.o.Memory {
		// Nothing is written: what changed is in memory already.
		m.dirty = newDirtySet()
		m.sinceCkpt = 0
		return flushJob{}, false, nil
	}
	if m.kvBuckets() == nil {
		return flushJob{}, false, nil
	}
	var job flushJob
	if m.ckptWanted(force) {
		// Encoded first: a failure here leaves the changed entries in
		// the dirty set for the next flush.
		var err error
		if job.ckpt, err = m.encodeCheckpoint(); err != nil {
			return flushJob{}, false, err
		}
	}
	// While catching up, an agent's row changes with nearly every event,
	// an open turn with the next few: they are written with the
	// checkpoints and at the end, not with each batch of ended turns.
	puts, turns, err := m.collect(force || job.ckpt != nil || !m.bulk)
	if err != nil {
		return flushJob{}, false, err
	}
	job.puts, job.turns = puts, turns
	return job, len(job.puts) > 0 || job.ckpt != nil, nil
}

// ckptWanted reports whether the next flush writes a checkpoint.
func (m *materializer) ckptWanted(force bool) bool {
	if m.o.Memory || m.kvBuckets() == nil {
		return false
	}
	return (m.Applied() != m.ckptSeq || m.ckptStale) && (force || m.checkpointDue())
}

// do writes a job: the entries and the checkpoint's chunks side by side,
// then — only if every entry and chunk was written — the checkpoint's
// head. It touches no fold state, so it may run on another goroutine.
func (m *materializer) do(ctx context.Context, job flushJob) flushResult {
	// The chunks go to the slot the head does not name, so no reader
	// takes them for a checkpoint before the head names them: they are
	// written while the entries are. Written after them, they were the
	// last ~5 ms of a rebuild's last flush (1.6 MB with a thousand
	// agents), with the cores half idle.
	var chunks chan chunksResult // nil when the job has no checkpoint
	if job.ckpt != nil || job.encoding != nil {
		chunks = make(chan chunksResult, 1)
		go func() { chunks <- m.writeChunks(ctx, job) }()
	}
	failed, err := m.write(ctx, job.puts, job.turns)
	if chunks == nil {
		return flushResult{failed: failed, turns: job.turns, err: err}
	}
	c := <-chunks
	if err != nil || c.err != nil {
		return flushResult{failed: failed, turns: job.turns, err: errors.Join(err, c.err)}
	}
	if err := m.writeHead(ctx, c.ckpt, c.chunks); err != nil {
		return flushResult{err: err}
	}
	return flushResult{ckpt: c.ckpt}
}

// chunksResult is a checkpoint whose chunks were written (or why not).
type chunksResult struct {
	ckpt   *encodedCheckpoint
	chunks int
	err    error
}

// writeChunks takes the job's checkpoint (waiting for its encoding) and
// writes its chunks.
func (m *materializer) writeChunks(ctx context.Context, job flushJob) chunksResult {
	c := job.ckpt
	if job.encoding != nil {
		r := <-job.encoding
		if r.err != nil {
			return chunksResult{err: r.err}
		}
		c = r.ckpt
	}
	n, err := m.writeCheckpointChunks(ctx, c)
	return chunksResult{ckpt: c, chunks: n, err: err}
}

// finishFlush takes a job's result in on the fold's goroutine: failed
// writes are marked changed again, a written checkpoint becomes the
// current one.
func (m *materializer) finishFlush(r flushResult) error {
	m.writing = nil
	for _, p := range r.failed {
		m.retry(p, r.turns)
	}
	if c := r.ckpt; c != nil {
		m.slot, m.ckptSeq, m.ckptAt = c.slot, c.seq, time.Now()
		m.sinceCkpt = int(m.Applied() - c.seq)
		m.ckptStale = false
		m.ckptDone.Store(c.seq)
	}
	return r.err
}

// collect takes the changed entries out of the dirty set as writes: the
// turns, and the roster and session rows too when rows is set. The turns
// are writing until the flush is finished; it returns them by id too.
func (m *materializer) collect(rows bool) ([]put, map[string]lifecycle.Turn, error) {
	d := m.dirty
	if rows {
		m.dirty = newDirtySetLike(d)
	} else {
		// Catching up, between checkpoints: only the turns that ended
		// go out. An open one changes again within a few events (typed,
		// submitted, replied), and writing each state it passed through
		// was nearly a quarter of a rebuild's turn writes; it goes with
		// the next checkpoint or at the end, when every changed entry
		// does.
		ended := make(map[string]lifecycle.Turn, m.dirty.ended)
		for id, t := range m.dirty.turns {
			if t.State.Final() {
				ended[id] = t
				delete(m.dirty.turns, id)
			}
		}
		m.dirty.ended = 0
		d = dirtySet{turns: ended}
	}
	m.writing = d.turns
	names := bucketNames(m.o)
	puts := make([]put, 0, d.len())
	var errs []error
	add := func(p put, v any) {
		data, err := encode(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("encode %s/%s: %w", p.bucket, p.name, err))
			return
		}
		p.data = data
		puts = append(puts, p)
	}
	for id := range d.agents {
		if a, ok := m.st.agents[id]; ok && a.Registered {
			add(put{bucket: names[0], name: id, view: viewAgent}, a.Agent)
		}
	}
	for name := range d.sessions {
		if s, ok := m.st.sessions[name]; ok {
			add(put{bucket: names[1], name: name, view: viewSession}, s.Session)
		}
	}
	for id, t := range d.turns {
		// A final turn expires TurnTTL after its last write; an open one
		// never does. It is encoded by do (encodeTurns), off the fold's
		// goroutine: the turns are values, which nothing changes.
		var ttl time.Duration
		if t.State.Final() {
			ttl = m.o.TurnTTL
		}
		puts = append(puts, put{bucket: names[2], name: id, ttl: ttl, view: viewTurn})
	}
	return puts, d.turns, errors.Join(errs...)
}

// encodeTurns encodes the turns that collect left to the job's writer,
// from the job's turns: on a catch-up the writes go on while the fold
// does, and the turns' encoding was a fifth of the fold's goroutine. Each
// batch of writes encodes its own (writeBatches), so the first goes out
// while the rest are encoded. It returns the puts to write (in puts'
// array: it is the writer's) and those that failed to encode, with why.
func encodeTurns(puts []put, turns map[string]lifecycle.Turn) (ok, failed []put, errs []error) {
	ok = puts[:0]
	for _, p := range puts {
		if p.view == viewTurn && p.data == nil {
			t := turns[p.name]
			data, err := encodeTurn(&t)
			if err != nil {
				failed, errs = append(failed, p), append(errs, fmt.Errorf("encode %s/%s: %w", p.bucket, p.name, err))
				continue
			}
			p.data = data
		}
		ok = append(ok, p)
	}
	return ok, failed, errs
}

// write publishes the puts asynchronously and waits for every ack; it
// returns the puts that failed. A turn's put not encoded yet is encoded
// from turns. Its error counts the failed writes and names the first: a
// full store fails every one of hundreds the same way, and that is one
// line, not hundreds.
func (m *materializer) write(ctx context.Context, puts []put, turns map[string]lifecycle.Turn) ([]put, error) {
	if len(puts) == 0 {
		return nil, nil
	}
	total := len(puts)
	ctx, cancel := withTimeout(ctx, m.o.Timeout)
	defer cancel()
	puts, failed, errs := m.writeBatches(ctx, puts, turns)
	puts, unencoded, encErrs := encodeTurns(puts, turns)
	failed, errs = append(failed, unencoded...), append(errs, encErrs...)
	wfailed, werrs := m.writeWindow(ctx, puts)
	failed, errs = append(failed, wfailed...), append(errs, werrs...)
	switch len(errs) {
	case 0:
		return nil, nil
	case 1:
		return failed, errs[0]
	}
	return failed, fmt.Errorf("%d of %d view writes failed, the first: %w", len(errs), total, errs[0])
}

// maxWritesInFlight bounds the view writes in flight at once.
const maxWritesInFlight = 1024

// writeWindow publishes puts asynchronously and waits for every ack; it
// returns the puts that failed and why. At most maxWritesInFlight are
// unacknowledged at once (nats.go stalls an async publish beyond its
// pending limit, 4,000 by default, and a catch-up's flush can be
// larger): the window slides, each ack letting the next put go, where
// waiting for a whole window before the next left the server idle
// between windows.
func (m *materializer) writeWindow(ctx context.Context, puts []put) (failed []put, errs []error) {
	futures := make([]jetstream.PubAckFuture, len(puts))
	fail := func(p put, err error) {
		failed, errs = append(failed, p), append(errs, fmt.Errorf("put %s/%s: %w", p.bucket, p.name, err))
	}
	acked := 0 // the puts before it are acknowledged or failed
	ack := func() {
		if f := futures[acked]; f != nil {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				fail(puts[acked], err)
			case <-ctx.Done():
				fail(puts[acked], ctx.Err())
			}
		}
		acked++
	}
	for i, p := range puts {
		for i-acked >= maxWritesInFlight {
			ack()
		}
		f, err := m.js.PublishMsgAsync(putMsg(p))
		if err != nil {
			fail(p, err)
			continue
		}
		futures[i] = f
	}
	for acked < len(puts) {
		ack()
	}
	return failed, errs
}

// snapshot is the whole fold state as of Seq: what a checkpoint stores so
// a restart resumes exactly where the fold was, without re-applying (and
// double counting) anything.
type snapshot struct {
	Seq      uint64                 `json:"seq"`
	Agents   map[string]*agentRow   `json:"agents"`
	Sessions map[string]*sessionRow `json:"sessions"`
	Hosts    map[string]*hostRow    `json:"hosts"`
	// Roles is each role's usage (budget windows); an older checkpoint
	// has none and starts them empty. An agent's own usage rides in its
	// row.
	Roles map[string]*usage `json:"roles,omitempty"`
	// Turns are the open turns (the Book); ended ones live in KV.
	Turns []lifecycle.Turn `json:"turns"`
	// Stream is the incarnation of the stream Seq is a position in (its
	// creation time): a stream created again restarts its sequences.
	Stream time.Time `json:"stream,omitzero"`
	// LogTime is the newest event time folded (state.logTime).
	LogTime time.Time `json:"log_time,omitzero"`
}

func (s *snapshot) state() *state {
	st := newState()
	if s.Agents != nil {
		st.agents = s.Agents
	}
	if s.Sessions != nil {
		st.sessions = s.Sessions
	}
	if s.Hosts != nil {
		st.hosts = s.Hosts
	}
	if s.Roles != nil {
		st.roles = s.Roles
	}
	for _, t := range s.Turns {
		st.book.Restore(t)
	}
	st.logTime = s.LogTime
	return st
}

// checkpointHead points at the chunks of the latest snapshot. Chunks are
// written to the slot the head does not name, then the head, so a crash
// mid-checkpoint leaves the previous checkpoint whole.
type checkpointHead struct {
	Seq    uint64    `json:"seq"`
	Slot   int       `json:"slot"`
	Chunks int       `json:"chunks"`
	Bytes  int       `json:"bytes"`
	Time   time.Time `json:"time"`
}

// chunkSize keeps each checkpoint value well under NATS's 1 MB payload.
const chunkSize = 512 << 10

func chunkKey(slot, n int) string {
	return CheckpointKey + "." + strconv.Itoa(slot) + "." + strconv.Itoa(n)
}

// encodedCheckpoint is a snapshot encoded for the slot it goes to.
type encodedCheckpoint struct {
	seq  uint64
	slot int
	data []byte
}

// encodeCheckpoint encodes the state as of now, for the slot the head
// does not name.
func (m *materializer) encodeCheckpoint() (*encodedCheckpoint, error) {
	return encodeSnapshot(m.snapshot(), 1-m.slot)
}

// encodeSnapshot encodes snap as the checkpoint for slot. snap shares
// the state's rows: nothing may fold meanwhile.
func encodeSnapshot(snap snapshot, slot int) (*encodedCheckpoint, error) {
	data, err := encode(snap)
	if err != nil {
		return nil, fmt.Errorf("encode checkpoint: %w", err)
	}
	return &encodedCheckpoint{seq: snap.Seq, slot: slot, data: data}, nil
}

// snapshot is the state as of now.
func (m *materializer) snapshot() snapshot {
	snap := snapshot{Seq: m.Applied(), Agents: m.st.agents, Sessions: m.st.sessions, Hosts: m.st.hosts, Roles: m.st.roles, Stream: m.stream, LogTime: m.st.logTime}
	snap.Turns = make([]lifecycle.Turn, 0, m.st.book.Len())
	m.st.book.Turns(func(t lifecycle.Turn) bool {
		snap.Turns = append(snap.Turns, t)
		return true
	})
	return snap
}

// writeCheckpointChunks writes c's chunks to its slot and returns how
// many there are. With BatchWrites they go as one atomic batch (one sync
// on a SyncAlways server instead of one per chunk); a refused batch is
// written piece by piece. The head that names them is writeHead's, once
// they and the entries the checkpoint counts are written.
func (m *materializer) writeCheckpointChunks(ctx context.Context, c *encodedCheckpoint) (int, error) {
	ctx, cancel := withTimeout(ctx, m.o.Timeout)
	defer cancel()
	b := m.kvBuckets()
	kv := b.checkpoints
	var chunks [][]byte
	for off := 0; off < len(c.data) || len(chunks) == 0; off += chunkSize {
		chunks = append(chunks, c.data[off:min(off+chunkSize, len(c.data))])
	}
	if m.o.BatchWrites && b.batched[kv.Bucket()] && len(chunks) >= 2 {
		puts := make([]put, 0, len(chunks))
		for n, chunk := range chunks {
			puts = append(puts, put{bucket: kv.Bucket(), name: chunkKey(c.slot, n), data: chunk})
		}
		err := writeBatch(ctx, m.js.Conn(), puts)
		if err == nil {
			return len(chunks), nil
		}
		if ctx.Err() != nil {
			return 0, fmt.Errorf("checkpoint: %w", err)
		}
		m.o.Logger.Warn("projections: the checkpoint's batch failed; writing it piece by piece", "err", err)
	}
	for n, chunk := range chunks {
		if _, err := kv.Put(ctx, chunkKey(c.slot, n), chunk); err != nil {
			return 0, fmt.Errorf("checkpoint chunk: %w", err)
		}
	}
	return len(chunks), nil
}

// writeHead writes the head that names c's chunks (all n of them
// written): from then on the checkpoint is c.
func (m *materializer) writeHead(ctx context.Context, c *encodedCheckpoint, n int) error {
	ctx, cancel := withTimeout(ctx, m.o.Timeout)
	defer cancel()
	head, _ := json.Marshal(checkpointHead{Seq: c.seq, Slot: c.slot, Chunks: n, Bytes: len(c.data), Time: time.Now().UTC()})
	if _, err := m.kvBuckets().checkpoints.Put(ctx, CheckpointKey, head); err != nil {
		return fmt.Errorf("checkpoint head: %w", err)
	}
	return nil
}

// loadCheckpoint reads the latest snapshot, or nil when there is none.
// A memory fold reads the checkpoint another projection keeps writing: a
// head that moved while its chunks were read means they may be of two
// snapshots, so it reads again. Every read goes through latest, so a
// gateway starting while the replica nearest it is frozen asks the
// stream's leader instead of waiting out its timeout. The head is
// compared by its bytes: every head written carries its own time.
func (m *materializer) loadCheckpoint(ctx context.Context) (*snapshot, error) {
	ctx, cancel := withTimeout(ctx, m.o.Timeout)
	defer cancel()
	b := m.kvBuckets()
	kv := b.checkpoints
	for try := 1; ; try++ {
		raw, ok, err := b.latest(ctx, kv, CheckpointKey)
		if err != nil {
			return nil, fmt.Errorf("load checkpoint: %w", err)
		}
		if !ok {
			return nil, nil
		}
		var head checkpointHead
		if err := json.Unmarshal(raw, &head); err != nil {
			return nil, fmt.Errorf("load checkpoint head: %w", err)
		}
		data := make([]byte, 0, head.Bytes)
		for n := range head.Chunks {
			c, ok, err := b.latest(ctx, kv, chunkKey(head.Slot, n))
			if err == nil && !ok {
				err = errors.New("missing")
			}
			if err != nil {
				return nil, fmt.Errorf("load checkpoint chunk %d: %w", n, err)
			}
			data = append(data, c...)
		}
		if m.o.Memory && try < 3 {
			if now, ok, err := b.latest(ctx, kv, CheckpointKey); err == nil && ok && !bytes.Equal(now, raw) {
				continue
			}
		}
		var snap snapshot
		if err := decode(data, &snap); err != nil {
			return nil, fmt.Errorf("load checkpoint: %w", err)
		}
		m.slot = head.Slot
		return &snap, nil
	}
}

func withTimeout(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, d)
}
