// Package retention keeps the FLEET stream from growing for ever without
// losing anything a reader still needs. Retention is a Policy (an age
// and/or a size, or none); a Compactor applies it by trimming the stream
// subject by subject (events.Trim), never past what the projections'
// Horizon says must stay:
//
//   - nothing at or after the projections' latest checkpoint: a restart
//     and a rebuild of a trimmed log resume from the checkpoint, so
//     whatever it covers can go;
//   - nothing of a turn that is not final (from its first event on):
//     whoever folds the log from its start (the herdr bridge, a plan's
//     views) still sees every open turn whole;
//   - the last registered, status, session, attention and exited event of
//     every agent that has not exited, and the last up, down and herdr
//     event of every host: enough for a fold from the start to know every
//     live agent;
//   - every event of a job that is not done.
//
// Below that floor the Policy decides: events older than the age, or the
// oldest beyond the size, go. The size is a target, not a cap: what must
// stay stays. Turn events go once their turn is final and old enough; an
// exited agent's events go entirely; a done job's too.
//
// retention imports events, lifecycle and projections.
package retention
