package orchestrator

import "errors"

// The orchestrator's sentinel errors; callers test them with errors.Is. A
// turn the orchestrator cannot queue (a bad target, an empty text, a text
// and a command) fails with package turns' errors, wrapped.
var (
	// ErrInvalidPlan: the plan file breaks its schema (see the package doc).
	ErrInvalidPlan = errors.New("invalid plan")
	// ErrNoSessions: a task names a session but the orchestrator has no
	// session manager.
	ErrNoSessions = errors.New("no session manager")
	// ErrNotRegistered: a Spawner returned before the agent's registered
	// event was in the log, so the session cannot be bound to it.
	ErrNotRegistered = errors.New("spawned agent not registered")
	// ErrNoSpawner: the process can bind existing sessions but cannot
	// start panes (no spawner wired).
	ErrNoSpawner = errors.New("no spawner")
	// ErrJobUnknown: a resume named a job with no created event.
	ErrJobUnknown = errors.New("unknown job")
	// ErrJobCancelled: the job was cancelled (Runner.Cancel); it is not
	// run again.
	ErrJobCancelled = errors.New("job cancelled")
	// ErrJobDone: a cancel named a job that had already ended.
	ErrJobDone = errors.New("job already done")
	// ErrTaskFailed: a task's turn ended failed, so the job failed.
	ErrTaskFailed = errors.New("task failed")
	// ErrConfig: a constructor was given an incomplete config.
	ErrConfig = errors.New("invalid config")
)
