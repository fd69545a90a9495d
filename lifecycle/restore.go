package lifecycle

import "slices"

// Restore puts a saved turn back into the book — a projection's checkpoint
// holds the open turns — so a fold can resume at the checkpoint instead of
// replaying the log from its start. Restoring every open turn of a book,
// in any order, yields a book that folds the rest of the log exactly as
// the original would: queues are ordered by stream position (QueueSeq for
// an agent's queue, LastSeq for a role's unassigned turns) and a typed or
// submitted turn becomes its agent's turn in flight. A turn whose id the
// book already holds is replaced.
func (b *Book) Restore(t Turn) {
	if old, ok := b.turns[t.ID]; ok {
		b.unlink(old)
	}
	c := t
	b.turns[t.ID] = &c
	switch {
	case t.State.Final():
	case t.State == StateQueued && t.Agent == "":
		b.roles[t.Role] = insertBySeq(b.roles[t.Role], t.ID, t.LastSeq, func(id string) uint64 { return b.turns[id].LastSeq })
	case t.State == StateQueued:
		a := b.agent(t.Agent)
		a.queue = insertBySeq(a.queue, t.ID, t.QueueSeq, func(id string) uint64 { return b.turns[id].QueueSeq })
	default:
		b.agent(t.Agent).inFlight = t.ID
	}
}

// unlink removes a turn from every queue and in-flight slot.
func (b *Book) unlink(t *Turn) {
	if t.Agent == "" {
		b.roles[t.Role] = remove(b.roles[t.Role], t.ID)
	}
	if a, ok := b.agents[t.Agent]; ok {
		a.queue = remove(a.queue, t.ID)
		if a.inFlight == t.ID {
			a.inFlight = ""
		}
	}
}

func insertBySeq(ids []string, id string, seq uint64, seqOf func(string) uint64) []string {
	i, _ := slices.BinarySearchFunc(ids, seq, func(e string, s uint64) int {
		switch es := seqOf(e); {
		case es < s:
			return -1
		case es > s:
			return 1
		}
		return 0
	})
	return slices.Insert(ids, i, id)
}
