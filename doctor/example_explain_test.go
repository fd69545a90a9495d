package doctor_test

import (
	"fmt"

	"github.com/fleetd/fleetd/doctor"
	"github.com/fleetd/fleetd/natsauth"
)

// A command that finds no NATS says so as the doctor's nats line does,
// with its fix.
func ExampleExplain() {
	_, _, err := natsauth.Connect("nats://127.0.0.1:1", "example", "", "")
	e, ok := doctor.Explain(fmt.Errorf("open the log: %w", err), doctor.Inputs{NATSURL: "nats://127.0.0.1:1"})
	fmt.Println(ok)
	fmt.Println(e.What)
	fmt.Println(e.Cause)
	fmt.Println(e.Fix)
	// Output:
	// true
	// NATS at nats://127.0.0.1:1 does not answer
	// no servers available for connection
	// start the fabric here ('fleetd up'), or point --nats (FLEET_NATS_URL) at its NATS
}
