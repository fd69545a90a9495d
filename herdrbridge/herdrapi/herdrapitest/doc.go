// Package herdrapitest holds what tests of code that talks to herdr share:
// a fake herdr (herdrtest) with a client whose every request is validated
// against herdr's schema, and waits on panes, statuses and events. It is
// imported by tests only.
package herdrapitest
