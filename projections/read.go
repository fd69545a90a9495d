package projections

import (
	"cmp"
	"context"
	"slices"

	"github.com/fleetd/fleetd/lifecycle"
)

func (m *materializer) Roster() []*Agent {
	m.mu.RLock()
	defer m.mu.RUnlock()
	v := m.version.Load()
	prev := m.roster.Load()
	if prev != nil && prev.version == v {
		return prev.rows
	}
	registered := 0
	for _, a := range m.st.agents {
		if a.Registered {
			registered++
		}
	}
	var ids []string
	if prev != nil && prev.st == m.st && len(prev.ids) == registered {
		// A state's agents are only ever added and registered, never
		// taken away (a new state replaces the whole), so the same count
		// is the same agents, in the same order.
		ids = prev.ids
	} else {
		ids = make([]string, 0, registered)
		for id, a := range m.st.agents {
			if a.Registered {
				ids = append(ids, id)
			}
		}
		slices.Sort(ids)
		prev = nil
	}
	rows := make([]*Agent, len(ids))
	for i, id := range ids {
		cur := &m.st.agents[id].Agent
		if prev != nil && *prev.rows[i] == *cur {
			rows[i] = prev.rows[i]
			continue
		}
		a := *cur
		rows[i] = &a
	}
	m.roster.Store(&rosterRows{version: v, st: m.st, ids: ids, rows: rows})
	return rows
}

// rosterRows are the roster as of a version of the views. Every caller
// of Roster gets the same rows until the views change (the caller holds
// the read lock, under which the version cannot move), and a row that
// did not change is the same *Agent in the next version too. Copying
// every row at each change was ~400 KB at 1,000 agents, and while the
// collector marks, every pointer copied pays its write barrier: 1–4.7 ms
// in one call of eight after a change. The rows are never written after
// they are stored; a change makes new ones.
type rosterRows struct {
	version uint64
	st      *state // the state ids lists the registered agents of
	ids     []string
	rows    []*Agent
}

func (m *materializer) Agent(id string) (Agent, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	a, ok := m.st.agents[id]
	if !ok || !a.Registered {
		return Agent{}, false
	}
	return a.Agent, true
}

func (m *materializer) Sessions() []Session {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]Session, 0, len(m.st.sessions))
	for _, s := range m.st.sessions {
		out = append(out, s.Session)
	}
	slices.SortFunc(out, func(x, y Session) int { return cmp.Compare(x.Name, y.Name) })
	return out
}

func (m *materializer) Hosts() []Host {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := make([]Host, 0, len(m.st.hosts))
	for name, h := range m.st.hosts {
		out = append(out, Host{Host: name, LastBeat: h.LastBeat, Down: h.Down, Stale: h.Stale, Unheard: h.Unheard})
	}
	slices.SortFunc(out, func(x, y Host) int { return cmp.Compare(x.Host, y.Host) })
	return out
}

func (m *materializer) Turns(match func(lifecycle.Turn) bool) []lifecycle.Turn {
	// The turns are copied under the read lock and matched after it: a
	// match that reads the views (the dashboard's asks for a turn's
	// agent) would take the lock a second time, and a fold waiting to
	// write in between blocks that second read for ever, while the fold
	// waits for the first (sync.RWMutex: a pending writer blocks new
	// readers).
	// The Book's turns change in place, so they are copied; the cache's
	// are only boxed (16 bytes a turn against 768: the gateway caches
	// 10,000) and copied out once they match.
	m.mu.RLock()
	out := make([]lifecycle.Turn, 0, m.st.book.Len())
	m.st.book.Turns(func(t lifecycle.Turn) bool {
		out = append(out, t)
		return true
	})
	ended := m.cache.boxes()
	m.mu.RUnlock()
	// Under the read lock a turn is in one of the two: the fold moves an
	// ended turn from the Book to the cache in one locked step.
	if match != nil {
		out = slices.DeleteFunc(out, func(t lifecycle.Turn) bool { return !match(t) })
	}
	for _, b := range ended {
		if t := b.(lifecycle.Turn); match == nil || match(t) {
			out = append(out, t)
		}
	}
	slices.SortFunc(out, func(x, y lifecycle.Turn) int {
		if c := y.QueuedAt.Compare(x.QueuedAt); c != 0 {
			return c
		}
		return cmp.Compare(y.ID, x.ID)
	})
	return out
}

// memTurn finds a turn in memory: open in the Book or ended in the cache.
// The caller holds mu.
func (m *materializer) memTurn(id string) (lifecycle.Turn, bool) {
	if t, ok := m.st.book.Turn(id); ok {
		return t, true
	}
	return m.cache.get(id)
}

func (m *materializer) Turn(ctx context.Context, id string) (lifecycle.Turn, bool, error) {
	m.mu.RLock()
	t, ok := m.memTurn(id)
	m.mu.RUnlock()
	if ok {
		return t, true, nil
	}
	return m.kvTurn(ctx, id)
}

// kvTurn reads a turn the fold no longer holds from the turns bucket.
func (m *materializer) kvTurn(ctx context.Context, id string) (lifecycle.Turn, bool, error) {
	b := m.kvBuckets()
	if b == nil {
		return lifecycle.Turn{}, false, nil
	}
	var t lifecycle.Turn
	ok, err := b.get(ctx, b.turns, id, &t, m.o.Timeout)
	return t, ok, err
}

func (m *materializer) WaitTurn(ctx context.Context, id string, done func(lifecycle.Turn) bool) (lifecycle.Turn, error) {
	// A turn that ended long ago is only in KV; it cannot change again.
	m.mu.RLock()
	_, inMem := m.memTurn(id)
	m.mu.RUnlock()
	if !inMem {
		t, ok, err := m.kvTurn(ctx, id)
		if err != nil {
			return lifecycle.Turn{}, err
		}
		if ok && done(t) {
			return t, nil
		}
	}
	for {
		m.mu.RLock()
		t, ok := m.memTurn(id)
		// Registering under the read lock means no fold step can land
		// between reading t and the registration: a change after t wakes
		// w. done is called after the lock, as Turns' match is: a done
		// that reads the views would take the lock a second time.
		w := m.waitFor(id)
		m.mu.RUnlock()
		if ok && done(t) {
			m.unwait(id, w)
			return t, nil
		}
		select {
		case <-w.ch:
		case <-ctx.Done():
			m.unwait(id, w)
			return t, ctx.Err()
		}
	}
}

// waitFor registers one more waiter for turn id's next change.
func (m *materializer) waitFor(id string) *waiter {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	w, found := m.turnWaiters[id]
	if !found {
		w = &waiter{ch: make(chan struct{})}
		m.turnWaiters[id] = w
	}
	w.n++
	return w
}

// unwait takes back a registration of waitFor that was not woken.
func (m *materializer) unwait(id string, w *waiter) {
	m.wmu.Lock()
	defer m.wmu.Unlock()
	if w.n--; w.n == 0 && m.turnWaiters[id] == w {
		delete(m.turnWaiters, id)
	}
}

func (m *materializer) WaitSeq(ctx context.Context, seq uint64) error {
	if m.Applied() >= seq {
		return nil
	}
	m.wmu.Lock()
	// Checked again under the lock setApplied takes after storing: it
	// cannot pass between this check and the registration.
	if m.Applied() >= seq {
		m.wmu.Unlock()
		return nil
	}
	w := seqWaiter{seq: seq, ch: make(chan struct{})}
	m.seqWaiters = append(m.seqWaiters, w)
	m.wmu.Unlock()
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		m.wmu.Lock()
		m.seqWaiters = slices.DeleteFunc(m.seqWaiters, func(x seqWaiter) bool { return x.ch == w.ch })
		m.wmu.Unlock()
		return ctx.Err()
	}
}

func (m *materializer) Applied() uint64 { return m.applied.Load() }

func (m *materializer) Version() uint64 { return m.version.Load() }

func (m *materializer) Subscribe() (<-chan Change, func()) {
	ch := make(chan Change, 1024)
	m.smu.Lock()
	m.subs[ch] = struct{}{}
	m.smu.Unlock()
	var once bool
	return ch, func() {
		m.smu.Lock()
		defer m.smu.Unlock()
		if !once {
			once = true
			delete(m.subs, ch)
			close(ch)
		}
	}
}

func (m *materializer) Usage(kind, id string) Usage {
	m.mu.RLock()
	defer m.mu.RUnlock()
	switch kind {
	case KindAgent:
		if a, ok := m.st.agents[id]; ok {
			return a.Usage.view()
		}
	case KindRole:
		return m.st.roles[id].view()
	}
	return Usage{}
}
