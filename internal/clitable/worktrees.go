package clitable

import (
	"fmt"
	"time"

	"github.com/fleetd/fleetd/worktree"
)

// Worktrees is the table of 'fleetd worktrees'; with prune, a last column
// says what --prune did with each one.
func Worktrees(prune bool) Table[worktree.Row] {
	t := Table[worktree.Row]{
		Header: "NAME\tBRANCH\tDIRTY\tAHEAD\tMERGED\tPUSHED\tAGENT\tPATH",
		Empty:  "(no agent worktrees)",
		Line: func(r worktree.Row, _ time.Time) string {
			line := fmt.Sprintf("%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s", r.Name, worktree.BranchPrefix+r.Name, dirty(r.Entry), r.Ahead,
				yesNo(r.Merged), yesNo(r.Pushed), occupant(r), r.Path)
			if !prune {
				return line
			}
			switch {
			case r.Pruned:
				return line + "\tremoved"
			case r.Live:
				return line + "\tin use"
			}
			return line + "\tKEPT: " + r.Kept
		},
	}
	if prune {
		t.Header += "\tPRUNE"
	}
	return t
}

// dirty is the DIRTY column: the uncommitted files, or why there is no
// count.
func dirty(e worktree.Entry) string {
	switch {
	case e.Missing:
		return "missing"
	case e.Err != "":
		return "error: " + e.Err
	}
	return fmt.Sprint(e.Dirty)
}

// occupant is the AGENT column: who works there, or last did.
func occupant(r worktree.Row) string {
	switch {
	case r.Agent == "":
		return "-"
	case r.Live:
		return r.Agent
	}
	return r.Agent + " (exited)"
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
