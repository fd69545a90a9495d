// Package viewstest is a test double of projections.Views: it follows the
// event log and folds it with lifecycle.Book into a roster, sessions and
// turns, in memory. The router and lead shim tests use it until (and
// beside) the materialized projection; production code never imports it.
//
// viewstest imports events, lifecycle and projections only.
package viewstest
