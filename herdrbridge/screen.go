package herdrbridge

import (
	"context"
	"fmt"

	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
)

// Screen is what one of this host's agents shows: its pane's visible
// screen as herdr reads it, for a person to see what the agent sees.
type Screen struct {
	Agent    string
	Pane     string
	Text     string
	Revision uint64
}

// Screen reads the visible screen of one of this host's live agents
// (herdr's pane.read). It only reads: nothing is typed, so a person may
// look at a pane as often as they like without touching the agent. An
// agent that is not live here (exited, another host's, being restarted)
// is ErrNotHere or ErrRestarting, as for Stop.
func (b *Bridge) Screen(ctx context.Context, agent string) (Screen, error) {
	b.mu.Lock()
	a, err := b.ownedFor(agent)
	var pane string
	if err == nil {
		pane = a.pane
	}
	b.mu.Unlock()
	if err != nil {
		return Screen{}, err
	}
	r, err := b.client.Read(ctx, herdrapi.ReadRequest{PaneID: pane, Source: herdrapi.SourceVisible})
	if err != nil {
		return Screen{}, fmt.Errorf("read %s's screen (pane %s): %w", agent, pane, err)
	}
	return Screen{Agent: agent, Pane: pane, Text: r.Text, Revision: r.Revision}, nil
}
