package mcpserver

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxLine bounds one input line: a message of the largest text the shim
// takes (1 MiB, JSON-escaped) and room to spare.
const maxLine = 16 << 20

// JSON-RPC's error codes for input that is no request (JSON-RPC 2.0, 5.1).
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// lineFilter stands between stdin and the MCP SDK, which ends the session
// on the first line it cannot decode. Each line that is a JSON-RPC
// message (an object with "jsonrpc": "2.0", or a batch) goes on to the
// SDK; any other line is answered on out with a JSON-RPC error (-32700
// for a line that is not JSON, -32600 for JSON that is no message, id
// null) and the session goes on.
type lineFilter struct {
	in io.Reader
	// out is the client's stream, shared with the SDK's writes: each
	// Write is one whole message, under mu.
	out *lockedWriter
	pw  *io.PipeWriter
}

// lockedWriter serialises whole-message writes to one stream.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }

// filteredTransport is an MCP transport over in and out that survives
// malformed lines; run must be started (and is ended by in's end or the
// SDK closing the pipe).
func filteredTransport(in io.Reader, out io.Writer) (*mcp.IOTransport, *lineFilter) {
	pr, pw := io.Pipe()
	lw := &lockedWriter{w: out}
	return &mcp.IOTransport{Reader: pr, Writer: lw, MaxLineLength: maxLine}, &lineFilter{in: in, out: lw, pw: pw}
}

// run copies the valid lines of in to the SDK until in ends (then the SDK
// sees its end too) or the SDK stops reading.
func (f *lineFilter) run() {
	br := bufio.NewReaderSize(f.in, 64<<10)
	for {
		line, tooLong, err := readLine(br)
		if t := bytes.TrimSpace(line); len(t) > 0 || tooLong {
			if werr := f.pass(t, tooLong); werr != nil {
				return
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = nil
			}
			f.pw.CloseWithError(err)
			return
		}
	}
}

// pass hands a message line to the SDK, or answers a line that is none.
func (f *lineFilter) pass(line []byte, tooLong bool) error {
	switch code, why := check(line, tooLong); code {
	case 0:
		_, err := f.pw.Write(append(line, '\n'))
		return err
	default:
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": code, "message": why}})
		_, err := f.out.Write(append(b, '\n'))
		return err
	}
}

// check is 0 for a JSON-RPC message line, else the error code and message
// to answer it with.
func check(line []byte, tooLong bool) (int, string) {
	if tooLong {
		return codeParseError, "Parse error: the line is longer than 16 MiB"
	}
	if !json.Valid(line) {
		return codeParseError, "Parse error: the line is not JSON"
	}
	if line[0] == '[' {
		return 0, ""
	}
	var msg struct {
		JSONRPC string `json:"jsonrpc"`
	}
	if line[0] != '{' || json.Unmarshal(line, &msg) != nil || msg.JSONRPC != "2.0" {
		return codeInvalidRequest, `Invalid Request: not a JSON-RPC 2.0 message (an object with "jsonrpc": "2.0")`
	}
	return 0, ""
}

// readLine reads up to the next newline; a line over maxLine is read to
// its end but not kept (tooLong).
func readLine(br *bufio.Reader) (line []byte, tooLong bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > maxLine {
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, tooLong, err
		}
	}
}
