package dashboard

// JobBoard is what a Server's live job board (jobHub) holds, for the
// tests of package dashboard_test.
type JobBoard struct {
	// Open says whether the board is running.
	Open bool
	// Streams counts the streams holding it, Views the distinct views
	// they show, Renders the fragments it rendered since it started.
	Streams, Views int
	Renders        uint64
}

// JobBoardOf reads s's live job board.
func JobBoardOf(s *Server) JobBoard {
	jobHubs.mu.Lock()
	h := jobHubs.m[s]
	jobHubs.mu.Unlock()
	if h == nil {
		return JobBoard{}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	jb := JobBoard{Open: true, Views: len(h.groups), Renders: h.renders.Load()}
	for _, g := range h.groups {
		jb.Streams += len(g.subs)
	}
	return jb
}
