// Package restart is the one way a long-lived fleetd loop (a consumer, a
// follower of the log) outlives its failures: run it again after a
// backoff, and say each trouble once rather than at every retry. It
// imports no fleetd package.
package restart
