package leadshim

import (
	"context"
	"net/http"
	"net/url"
	"time"
)

// Screen answers GET /agents/{id}/screen: what the agent's pane shows
// now (herdr's visible screen, plain text), and the pane's revision,
// which grows whenever the screen changes.
type Screen struct {
	Agent    string `json:"agent"`
	Pane     string `json:"pane"`
	Text     string `json:"text"`
	Revision uint64 `json:"revision"`
}

// screenWait bounds one screen read: a page polls every second or two,
// so a read that hangs longer is worth less than the next one.
const screenWait = 5 * time.Second

// getScreen reads the visible screen of an agent of this host, for a
// person to see what the agent sees. It is a read (GET), so the sign-in
// cookie stands for the token as on the roster, and nothing it does can
// type into the pane. Another host's agent is 409 other_host, as for
// stop and restart: only the owning gateway reads a pane.
func (s *Server) getScreen(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if aerr := s.agentForAction(id); aerr != nil {
		writeError(w, aerr)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), screenWait)
	defer cancel()
	sc, err := s.cfg.Agents.Screen(ctx, id)
	if err != nil {
		writeError(w, agentsError(err))
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, sc)
}

// Screen reads what an agent of the shim's host shows (GET
// /agents/{id}/screen).
func (c *Client) Screen(ctx context.Context, agent string) (Screen, error) {
	var out Screen
	err := c.Do(ctx, http.MethodGet, "/agents/"+url.PathEscape(agent)+"/screen", nil, &out)
	return out, err
}
