// Package checkfor is the one way fleetd's tests wait for something that
// happens asynchronously: poll a condition with a deadline, never sleep and
// hope. It imports no fleetd package and is only ever imported by tests.
package checkfor
