package mcpserver_test

import (
	"bufio"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/fleetd/fleetd/internal/fleettest"
	"github.com/fleetd/fleetd/leadshim"
	"github.com/fleetd/fleetd/mcpserver"
)

// A line that is not a JSON-RPC message is answered with a JSON-RPC error
// (-32700 for what is not JSON, -32600 for JSON that is no message) and
// the session goes on: before, `fleetd mcp` exited on it and the client
// lost the fleet's tools.
func TestAMalformedLineIsAnsweredAndTheSessionGoesOn(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	cfg := mcpserver.Config{Fleet: leadshim.NewClient("http://127.0.0.1:1", ""), Agent: "main-a"}
	done := make(chan error, 1)
	go func() { done <- mcpserver.ServeIO(fleettest.Ctx(t), cfg, inR, outW); outW.Close() }()
	lines := bufio.NewScanner(outR)
	lines.Buffer(nil, 1<<20)

	send := func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	type answer struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	next := func() answer {
		t.Helper()
		if !lines.Scan() {
			t.Fatalf("no answer: %v", lines.Err())
		}
		var a answer
		if err := json.Unmarshal(lines.Bytes(), &a); err != nil {
			t.Fatalf("answer %s: %v", lines.Bytes(), err)
		}
		return a
	}
	wantError := func(what string, code int) {
		t.Helper()
		if a := next(); a.Error == nil || a.Error.Code != code || string(a.ID) != "null" {
			t.Errorf("%s: answered %+v, want error %d with id null", what, a, code)
		}
	}

	send("this is not json")
	wantError("a line that is not JSON", -32700)
	send(`{"method":"tools/list","id":7}`)
	wantError("JSON without jsonrpc 2.0", -32600)
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`)
	if a := next(); string(a.ID) != "1" || a.Error != nil || len(a.Result) == 0 {
		t.Fatalf("initialize after bad lines: %+v", a)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"`) // cut short
	wantError("a cut-short request", -32700)
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
	if a := next(); string(a.ID) != "3" || !strings.Contains(string(a.Result), `"roster"`) {
		t.Errorf("tools/list after a bad line: %+v", a)
	}

	inW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServeIO at the end of input: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ServeIO did not end with its input")
	}
}
