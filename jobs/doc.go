// Package jobs owns a job's context: the store folded from its JobContext
// events (fleet.job.<job>.context), the slice a task or a delegated turn
// gets from it, and the record of that slice as a JobSliced event, so any
// agent's view of a job can be rebuilt from the log.
//
// A store holds items (key, tags, text, provenance, size); a later item
// for a key replaces the earlier one. Select cuts a slice within a byte
// budget, whole items in a fixed order:
//
//  1. the rollups of the needed tasks (rollup:<task>), in the order given;
//  2. the explicit keys, in the order given;
//  3. items with any selected tag, newest first, ties by key.
//
// An item is considered once, at its first place. One that does not fit
// is skipped and listed as truncated; later smaller items may still fit.
// The same store, selector and budget always give the same slice.
//
// Prompt renders what a slice's receiver is sent: the instructions, a
// blank line, and one <context> block per item, in slice order:
//
//	<context key="rollup:b" tags="rollup,task:b" from="task:b turn:01J… agent:main-b-1">
//	…reply of b…
//	</context>
//
// Job is the one fold of a job's whole record (fleet.job.<job>.>: the
// plan, task states, slices, rollups, the end): the orchestrator resumes
// from it and the dashboard shows it, also as it stood at a point of the
// log (LoadJob's toSeq).
//
// SliceFor and RecordSlice are the path of a send that names a job (the
// lead shim's "job" with "context" selectors); the orchestrator selects
// from the store it folds itself and records with RecordSlice too.
//
// jobs sits below both the lead shim and the orchestrator. It imports
// events only; never lifecycle, turns, projections, orchestrator,
// leadshim or cmd.
package jobs
