package herdrapi_test

import (
	"fmt"

	"github.com/fleetd/fleetd/herdrbridge/herdrapi"
)

// herdr finds its socket from the environment; so does fleetd.
func ExampleSocketPath() {
	env := map[string]string{"HOME": "/home/dev", "HERDR_SESSION": "fleet"}
	path, _ := herdrapi.SocketPath(func(k string) string { return env[k] })
	fmt.Println(path)
	// Output: /home/dev/.config/herdr/sessions/fleet/herdr.sock
}
