package dashboard

import (
	"slices"

	"github.com/fleetd/fleetd/projections"
)

// CSRFHeader names the request header the shim in front hands the page's
// CSRF token in (leadshim.CSRFHeader: the same name, which the page's
// actions send back). The dashboard holds no sign-in of its own, so it
// only passes the token on: the shim makes and checks it.
const CSRFHeader = "X-Fleetd-Csrf"

// targets are what a send may name, for the send form's suggestions:
// each live agent, each role as role:<role>, and each active named
// session as the agent that serves it; and the roles seen in the roster,
// for the spawn form.
func (s *Server) targets() (targets [][2]string, roles []string) {
	live := map[string]bool{}
	for _, a := range s.cfg.Fleet.Roster() {
		if a.Exited {
			continue
		}
		live[a.Agent] = true
		targets = append(targets, [2]string{a.Agent, "agent · " + a.Role})
		if a.Role != "" && !slices.Contains(roles, a.Role) {
			roles = append(roles, a.Role)
		}
	}
	slices.Sort(roles)
	for _, r := range roles {
		targets = append(targets, [2]string{"role:" + r, "any agent of role " + r})
	}
	for _, ss := range s.cfg.Fleet.Sessions() {
		if live[ss.Agent] && ss.State == projections.SessionActive {
			targets = append(targets, [2]string{ss.Agent, "session " + ss.Name})
		}
	}
	return targets, roles
}
