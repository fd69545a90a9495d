package jobs_test

import (
	"fmt"

	"github.com/fleetd/fleetd/jobs"
)

// A slice takes the rollups of a task's needs first, then explicit keys,
// then tag matches newest first, whole items within the budget.
func ExampleSelect() {
	s := jobs.NewStore()
	s.Put(jobs.Item{Key: "spec", Tags: []string{"api"}, Text: "GET /v1/items", Seq: 1})
	s.Put(jobs.Item{Key: "style", Tags: []string{"api"}, Text: "use snake_case everywhere, always", Seq: 2})
	s.Put(jobs.Item{Key: "rollup:design", Tags: []string{"rollup"}, Text: "two endpoints", Seq: 3})

	sl := jobs.Select(s, jobs.Selector{Needs: []string{"design"}, Tags: []string{"api"}}, 30)
	fmt.Println(sl.Keys(), sl.Bytes, "truncated:", sl.Truncated)
	fmt.Println(jobs.Prompt("Implement the endpoints.", sl))
	// Output:
	// [rollup:design spec] 26 truncated: [style]
	// Implement the endpoints.
	//
	// <context key="rollup:design" tags="rollup">
	// two endpoints
	// </context>
	// <context key="spec" tags="api">
	// GET /v1/items
	// </context>
}
