package herdrbridge_test

import (
	"fmt"

	"github.com/fleetd/fleetd/herdrbridge"
)

// A message that tries to end the agent's bracketed paste early and press
// Enter is reduced to its text before it is typed.
func ExampleStripControl() {
	msg := "fix it\x1b[201~\r\x1b]0;pwned\x07rm -rf ~"
	fmt.Printf("%q\n", herdrbridge.StripControl(msg))
	// Output: "fix it\nrm -rf ~"
}

// herdr finds its socket from the environment; so does fleetd.
func ExampleSocketPath() {
	env := map[string]string{"HOME": "/home/dev", "HERDR_SESSION": "fleet"}
	path, _ := herdrbridge.SocketPath(func(k string) string { return env[k] })
	fmt.Println(path)
	// Output: /home/dev/.config/herdr/sessions/fleet/herdr.sock
}
