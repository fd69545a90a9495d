// Package clitable is the text fleetd's client commands print: a listing
// as JSON or as an aligned table (Table), and the columns a person reads
// in the roster, the sessions, the worktrees, a turn's timeline, the cost
// report and the event log's lines — an agent's status and what to notice about it, its branch
// and how far it stands from its base, how long ago it was last seen.
//
// It only renders rows other packages define (the read models of
// projections, the worktree listing, the shim's and the dashboard's API
// answers): it computes no fleet state, calls no component and does no
// I/O beyond the io.Writer it is given. It imports leadshim and
// dashboard for their wire types only, and must not import gateway,
// herdrbridge or anything that runs; cmd/fleetd keeps the flags and the
// fetching.
package clitable
