// Package orchestrator is fleetd's recursive session manager and job
// runner: orchestrator : mains :: main : workers. One implementation runs
// at every tier — the orchestrator over its mains, a main over its workers
// — with the same verbs: spawn, name, resume and scope.
//
// It owns three things:
//
//   - Sessions, the session manager: named, resumable agent sessions.
//     Session <name> is served by agents <name>-1, <name>-2, … (one per
//     incarnation). A closed session is resumed by spawning the next
//     incarnation with Resume = its recorded Claude session id (the role's
//     command gets --resume <id>); a session whose tokens passed its cap
//     gets a fresh incarnation without resume, and its next task a slice
//     instead of the history. Run reaps panes idle past the TTL (keeping
//     their sessions resumable) and spawned agents no session owns.
//   - Slicing for its tasks: each task gets a slice of the job's context
//     store (package jobs: Select within a byte budget, Prompt), recorded
//     as a JobSliced event before the turn is queued, so any agent's view
//     of the job can be rebuilt from the log.
//   - Jobs: Orchestrator.Run runs a plan, sending ready tasks at once and
//     folding each reply back as the item rollup:<task>.
//
// Every decision is taken from the log and the views over it, never from
// state a restart would lose.
//
// # Plan file (JSON)
//
//	{
//	  "goal": "what the job is for",
//	  "budget": 16384,                      // default slice budget, bytes (optional)
//	  "context": [                          // seed items (optional)
//	    {"key": "spec", "tags": ["api"], "text": "…"}
//	  ],
//	  "sessions": [                         // session settings (optional)
//	    {"name": "main-a", "role": "main", "model": "opus", "cwd": "/src", "cap": 150000}
//	  ],
//	  "tasks": [
//	    {"id": "a",                         // token: [A-Za-z0-9][A-Za-z0-9_-]{0,62}
//	     "to": "session:main-a",            // "<agent>" | "role:R" | "session:<name>"
//	     "instructions": "…",
//	     "needs": ["b"],                    // task ids whose rollups it waits for
//	     "context": {"keys": ["spec"], "tags": ["api"]},
//	     "budget": 8192}                    // slice budget, bytes (optional)
//	  ]
//	}
//
// Unknown fields, duplicate ids, unknown or cyclic needs, bad targets and
// context keys starting with "rollup:" are rejected (all reported at once).
//
// # Slices
//
// A task's slice is cut by jobs.Select from the job's context store, with
// the rollups of its needs first, then its explicit keys, then its tags
// (see package jobs for the order and the rendered <context> blocks). A
// delegating main names context the same way — `fleetd send --to role:w
// --context spec,tag:api` — and with a job (--job or FLEET_JOB) the shim
// resolves it through jobs.SliceFor and records it with jobs.RecordSlice.
//
// # Jobs and crashes
//
// A job is the subject tree fleet.job.<job>.>: created (with the whole plan),
// context, sliced, task (sent → replied | failed) and done. For each task the
// orchestrator records the slice and then "sent" with the turn id BEFORE it
// queues the turn, and queues it under that id; rollup and replied events
// have ids derived from the turn id. A rerun of the same job therefore
// never re-sends a replied task, re-attaches to a sent one by waiting on
// its turn id, and re-queues under the same id (an idempotent append) a
// task whose queued event never landed. A task whose target is out of
// budget (Config.Budgets, the queue's gate) is not queued: its record says
// failed with budget_exhausted, the limit and frees_at, and the job fails;
// resuming it after frees_at sends the task again. The job's result is the rollups of
// the tasks nothing needs, in plan order, joined by a blank line.
//
// # Ports
//
// The package declares what it needs from the rest of fleetd: Spawner
// (cmd adapts herdrbridge's spawn), Sender (LogSender, which queues
// through turns.Queuer exactly as the lead shim does, with the same budget
// gate, is the default)
// and the read models, through projections.Views or the narrower
// SessionViews and TurnWaiter. It folds nothing itself: the gateway
// passes its projection, and a client such as `fleetd orchestrate` runs
// the same fold in memory (projections.Options Memory) through RunClient,
// which also prints the run's progress. Targets
// ("<agent>", "role:R", "session:<name>") are read by turns.ParseTarget;
// a session is resolved to its agent here.
//
// orchestrator imports events, lifecycle, projections, jobs and turns
// only, and projections only for Views and its row types; it must not
// import herdrbridge, roles, leadshim or cmd.
package orchestrator
