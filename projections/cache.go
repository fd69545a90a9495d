package projections

import (
	"container/list"
	"sync"

	"github.com/fleetd/fleetd/lifecycle"
)

// turnCache keeps the most recently used ended turns in memory, so the
// fold stays bounded while a recent turn is still answered without a KV
// read. It is safe for concurrent use.
type turnCache struct {
	mu    sync.Mutex
	size  int
	order *list.List // front: most recent; values are lifecycle.Turn
	index map[string]*list.Element
}

func newTurnCache(size int) *turnCache {
	return &turnCache{size: size, order: list.New(), index: map[string]*list.Element{}}
}

// add caches t and returns the id of the turn it pushed out, if any.
func (c *turnCache) add(t lifecycle.Turn) (evicted string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.index[t.ID]; ok {
		e.Value = t
		c.order.MoveToFront(e)
		return ""
	}
	c.index[t.ID] = c.order.PushFront(t)
	for c.order.Len() > c.size {
		last := c.order.Back()
		c.order.Remove(last)
		evicted = last.Value.(lifecycle.Turn).ID
		delete(c.index, evicted)
	}
	return evicted
}

func (c *turnCache) get(id string) (lifecycle.Turn, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.index[id]
	if !ok {
		return lifecycle.Turn{}, false
	}
	c.order.MoveToFront(e)
	return e.Value.(lifecycle.Turn), true
}

// boxes is every cached turn as stored, most recently used first: each
// boxed in an interface that is never written after (a change stores a
// new box), so the turns can be unboxed later, outside any lock, and
// only the ones wanted copied out.
func (c *turnCache) boxes() []any {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]any, 0, c.order.Len())
	for e := c.order.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value)
	}
	return out
}

// each calls fn for every cached turn, most recently used first, without
// changing the order, until fn returns false.
func (c *turnCache) each(fn func(lifecycle.Turn) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.order.Front(); e != nil; e = e.Next() {
		if !fn(e.Value.(lifecycle.Turn)) {
			return
		}
	}
}

// rewrite replaces every cached turn with fn of it, keeping the order.
func (c *turnCache) rewrite(fn func(lifecycle.Turn) lifecycle.Turn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := c.order.Front(); e != nil; e = e.Next() {
		e.Value = fn(e.Value.(lifecycle.Turn))
	}
}

func (c *turnCache) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.order.Init()
	clear(c.index)
}
