package orchestrator

import (
	"context"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/jobs"
)

// loadJob folds job from the log (jobs.Job): everything a resumed run
// needs.
func loadJob(ctx context.Context, log events.Log, job string) (*jobs.Job, error) {
	return jobs.LoadJob(ctx, log, job, 0)
}
