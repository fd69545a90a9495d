package herdrbridge

import (
	"context"
	"fmt"

	"github.com/fleetd/fleetd/events"
)

// Adopt registers an agent for a pane that already exists in this host's
// herdr (Origin "adopted"), so fleetd can deliver turns to something a
// person started by hand. It checks the pane exists, the agent id is free
// and no live agent of this host owns the pane. The pane's processes are
// not required to be clean: a running bridge checks them and reports a
// boundary crossing as an AgentStatusChanged with Violation. Adopt does
// not need Run.
func (b *Bridge) Adopt(ctx context.Context, pane, agent, role string) (events.AgentRegistered, error) {
	if err := events.ValidAgentID(agent); err != nil {
		return events.AgentRegistered{}, fmt.Errorf("adopt: %w", err)
	}
	r, err := b.cfg.Roles.Get(role)
	if err != nil {
		return events.AgentRegistered{}, fmt.Errorf("adopt %s: %w", agent, err)
	}
	info, err := b.client.Pane(ctx, pane)
	if err != nil {
		return events.AgentRegistered{}, fmt.Errorf("adopt %s: pane %s: %w", agent, pane, err)
	}
	hist, err := b.history(ctx, agent)
	if err != nil {
		return events.AgentRegistered{}, fmt.Errorf("adopt %s: %w", agent, err)
	}
	if hist.live() {
		return events.AgentRegistered{}, fmt.Errorf("adopt %s: %w (host %s, pane %s)", agent, ErrAgentExists, hist.reg.Host, hist.reg.Pane)
	}
	owner, err := b.paneOwner(ctx, info.PaneID)
	if err != nil {
		return events.AgentRegistered{}, fmt.Errorf("adopt %s: %w", agent, err)
	}
	if owner != "" {
		return events.AgentRegistered{}, fmt.Errorf("adopt %s: %w: pane %s is %s's", agent, ErrPaneOwned, info.PaneID, owner)
	}
	reg := events.AgentRegistered{Agent: agent, Host: b.cfg.Host, Pane: info.PaneID, Role: r.Name, Tier: r.Tier,
		Model: r.Model, Cwd: info.CWD, Origin: "adopted", EnvClass: r.EnvClass, Kind: r.Kind}
	if _, err := b.append(ctx, agent, "", reg, guard(agent, hist.lastSeq)); err != nil {
		return events.AgentRegistered{}, fmt.Errorf("adopt %s: register: %w", agent, err)
	}
	b.log.Info("adopted", "agent", agent, "role", r.Name, "pane", info.PaneID)
	return reg, nil
}

// paneOwner names the live agent of this host registered for pane, from
// the log's registrations and exits.
func (b *Bridge) paneOwner(ctx context.Context, pane string) (string, error) {
	regs := map[string]events.AgentRegistered{}
	q := events.Query{Subjects: []string{"fleet.agent.*.registered", "fleet.agent.*.exited"}}
	for ev, err := range b.cfg.Log.Read(ctx, q) {
		if err != nil {
			return "", err
		}
		switch d := ev.Data.(type) {
		case events.AgentRegistered:
			regs[ev.Subject] = d
		case events.AgentExited:
			delete(regs, ev.Subject)
		}
	}
	for id, r := range regs {
		if r.Host == b.cfg.Host && r.Pane == pane {
			return id, nil
		}
	}
	return "", nil
}
