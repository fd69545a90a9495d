package leadshim

import "errors"

var (
	// ErrInsecure means the shim was asked to listen beyond loopback
	// without a bearer token: DESIGN.md requires one on any other address.
	ErrInsecure = errors.New("leadshim: a non-loopback address needs a bearer token")
	// ErrConfig means the shim's Config is incomplete or invalid.
	ErrConfig = errors.New("leadshim: invalid config")
)

var (
	// ErrAgentExists is what a Spawner's error wraps when the name is
	// taken by a live agent: the shim answers 409 name_taken.
	ErrAgentExists = errors.New("agent already registered")
	// ErrBadPlan is what a Jobs runner's error wraps when the plan breaks
	// its schema: the shim answers 400 bad_plan.
	ErrBadPlan = errors.New("bad plan")
	// ErrUnknownJob is what a Jobs runner's error wraps when a resume
	// names a job the log does not hold: the shim answers 404.
	ErrUnknownJob = errors.New("unknown job")
	// ErrJobDone is what a Jobs runner's error wraps when a cancel names
	// a job that had ended: the shim answers 409 job_done.
	ErrJobDone = errors.New("job already done")
	// ErrNotHere is what an Agents port's error wraps when the agent is
	// not live on this host: the shim answers 409 agent_exited.
	ErrNotHere = errors.New("agent is not live on this host")
	// ErrNotRestartable is what an Agents port's error wraps for an agent
	// fleetd cannot start again (an adopted pane): 409 not_restartable.
	ErrNotRestartable = errors.New("agent cannot be restarted by fleetd")
	// ErrRestarting is what an Agents port's error wraps while the
	// agent's restart runs: 409 restarting.
	ErrRestarting = errors.New("agent is being restarted")
)
