package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/fleetd/fleetd/leadshim"
)

// The fabric stage runs fleetd as it is deployed: the gateway in the
// stage's process, herdr and the lead each in a process of their own. In
// one process, the lead's HTTP client and the fake herdr's panes shared
// the gateway's Go scheduler, so a reply written to the lead waited for a
// P behind the gateway's other readers of the same event before the
// client read it — a wait no lead, which is another process, has.

// child is a helper process of the stage, stopped with the stage.
type child struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // how it ended; read after done
}

// startChild starts exe with args in its own process group, stderr to
// errw.
func startChild(exe string, args []string, errw io.Writer) (*child, io.WriteCloser, io.ReadCloser, error) {
	cmd := exec.Command(exe, args...)
	cmd.Stderr = errw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, nil, fmt.Errorf("start %s %s: %w", filepath.Base(exe), strings.Join(args, " "), err)
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	go func() { c.err = cmd.Wait(); close(c.done) }()
	return c, in, out, nil
}

// exit waits briefly for a child whose output ended and says how it
// ended, for an error message.
func (c *child) exit() string {
	if c == nil {
		return "unknown"
	}
	select {
	case <-c.done:
		if c.err != nil {
			return c.err.Error()
		}
		return "exit status 0"
	case <-time.After(time.Second):
		return "still running"
	}
}

// stop asks the child to end (SIGTERM to its group, so herdr's panes go
// with it) and kills the group if it has not within grace.
func (c *child) stop(grace time.Duration) {
	pg := -c.cmd.Process.Pid
	_ = syscall.Kill(pg, syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = syscall.Kill(pg, syscall.SIGKILL)
		<-c.done
	}
}

// RuntimeAgentapi is StageConfig.Runtime's agentapi.
const RuntimeAgentapi = "agentapi"

// UnderAgentapi ends the name of every row measured under agentapi, so a
// row and its peer under herdr sit side by side in one report.
const UnderAgentapi = ", under agentapi"

// herdrProc is the built-in herdr run as `fleetd dev-herdr`.
type herdrProc struct {
	*child
	dir  string
	path string
}

// startHerdrProc starts `exe dev-herdr` (or, for the agentapi runtime,
// `exe agentapi-host`: the same protocol, each pane under agentapi) on a
// socket in a new temp dir and waits until it serves.
func startHerdrProc(ctx context.Context, exe, runtime string, errw io.Writer) (*herdrProc, error) {
	cmd := "dev-herdr"
	if runtime == RuntimeAgentapi {
		cmd = "agentapi-host"
	}
	// Unix socket paths are short-limited: keep it under /tmp.
	dir, err := os.MkdirTemp("", "fleetd-herdr-")
	if err != nil {
		return nil, err
	}
	h := &herdrProc{dir: dir, path: filepath.Join(dir, "herdr.sock")}
	c, in, out, err := startChild(exe, []string{cmd, "--socket", h.path}, errw)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	in.Close()
	h.child = c
	serving := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if strings.Contains(sc.Text(), h.path) {
				serving <- nil
				break
			}
		}
		_, _ = io.Copy(io.Discard, out)
		select {
		case serving <- fmt.Errorf("%s ended before it served (%s)", cmd, c.exit()):
		default: // it served
		}
	}()
	select {
	case err = <-serving:
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(30 * time.Second):
		err = fmt.Errorf("%s did not serve within 30s", cmd)
	}
	if err != nil {
		h.close()
		return nil, fmt.Errorf("built-in herdr: %w", err)
	}
	return h, nil
}

// close stops herdr (its panes with it) and removes its socket's dir.
func (h *herdrProc) close() {
	// herdr's own Close hangs up each pane and waits out a grace period.
	h.stop(20 * time.Second)
	os.RemoveAll(h.dir)
}

// leadCall is one POST /message (or a plain GET) the lead process makes;
// leadAnswer its result, with the lead's own clock around the call (wall
// clock, in Unix nanoseconds, to set beside the events' stored times).
type leadCall struct {
	ID  int              `json:"id"`
	Msg leadshim.Message `json:"msg"`
	// Get, when set, is a URL the lead GETs instead of sending Msg: a
	// request with no work behind it, the floor of the lead's hop.
	Get string `json:"get,omitempty"`
	// Post, when set, is a URL the lead POSTs Msg to, as JSON, instead of
	// the shim's /message (the null turn's handler), reading the answer
	// whole.
	Post string `json:"post,omitempty"`
}

type leadAnswer struct {
	ID    int               `json:"id"`
	Start int64             `json:"start"`
	End   int64             `json:"end"`
	Env   leadshim.Envelope `json:"env"`
	Err   string            `json:"err,omitempty"`
}

// ServeLead is the bench's lead process (`fleetd bench --lead URL`): it
// reads calls as JSON lines from in, makes each at once (they may
// overlap) against the shim at url, and writes each answer as a JSON
// line to out. It returns when in ends and every call has been answered.
func ServeLead(ctx context.Context, url, token string, in io.Reader, out io.Writer) error {
	client := leadshim.NewClient(url, token)
	// The same transport as the shim client's: keep-alive, one process
	// hop each way.
	plain := &http.Client{}
	var (
		mu  sync.Mutex
		wg  sync.WaitGroup
		enc = json.NewEncoder(out)
	)
	dec := json.NewDecoder(in)
	for {
		var c leadCall
		if err := dec.Decode(&c); err != nil {
			wg.Wait()
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("bench lead: %w", err)
		}
		wg.Go(func() {
			a := leadAnswer{ID: c.ID, Start: time.Now().UnixNano()}
			var err error
			switch {
			case c.Get != "":
				err = get(ctx, plain, c.Get)
			case c.Post != "":
				err = postJSON(ctx, plain, c.Post, c.Msg)
			default:
				err = client.Do(ctx, http.MethodPost, "/message", c.Msg, &a.Env)
			}
			a.End = time.Now().UnixNano()
			if err != nil {
				a.Err = err.Error()
			}
			mu.Lock()
			defer mu.Unlock()
			_ = enc.Encode(a)
		})
	}
}

// postJSON POSTs v as JSON to url, as the shim's client does, and reads
// the answer whole.
func postJSON(ctx context.Context, c *http.Client, url string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, err = io.ReadAll(res.Body)
	return err
}

// get reads url's answer whole.
func get(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	_, err = io.Copy(io.Discard, res.Body)
	return err
}

// leadProc is the stage's side of the lead process.
type leadProc struct {
	*child
	in io.WriteCloser

	mu      sync.Mutex
	next    int
	waiting map[int]chan leadAnswer
	gone    chan struct{} // closed when the lead's output ended
}

// startLeadProc starts `exe bench --lead url`.
func startLeadProc(exe, url string, errw io.Writer) (*leadProc, error) {
	c, in, out, err := startChild(exe, []string{"bench", "--lead", url}, errw)
	if err != nil {
		return nil, err
	}
	l := &leadProc{child: c, in: in, waiting: map[int]chan leadAnswer{}, gone: make(chan struct{})}
	go l.read(out)
	return l, nil
}

// read hands each answer to its caller.
func (l *leadProc) read(out io.Reader) {
	defer close(l.gone)
	dec := json.NewDecoder(out)
	for {
		var a leadAnswer
		if err := dec.Decode(&a); err != nil {
			return
		}
		l.mu.Lock()
		ch := l.waiting[a.ID]
		delete(l.waiting, a.ID)
		l.mu.Unlock()
		if ch != nil {
			ch <- a
		}
	}
}

// send makes one POST /message through the lead process and returns the
// reply envelope and when, by the lead's clock, the call started and
// its answer was read.
func (l *leadProc) send(ctx context.Context, m leadshim.Message) (leadshim.Envelope, time.Time, time.Time, error) {
	return l.call(ctx, leadCall{Msg: m})
}

// post has the lead POST m to url (postJSON) and returns when, by the
// lead's clock, the request started and its answer was read.
func (l *leadProc) post(ctx context.Context, url string, m leadshim.Message) (time.Time, time.Time, error) {
	_, start, end, err := l.call(ctx, leadCall{Msg: m, Post: url})
	return start, end, err
}

// get has the lead GET url and returns when, by the lead's clock, the
// request started and its answer was read.
func (l *leadProc) get(ctx context.Context, url string) (time.Time, time.Time, error) {
	_, start, end, err := l.call(ctx, leadCall{Get: url})
	return start, end, err
}

// call makes c through the lead process.
func (l *leadProc) call(ctx context.Context, c leadCall) (leadshim.Envelope, time.Time, time.Time, error) {
	ch := make(chan leadAnswer, 1)
	l.mu.Lock()
	l.next++
	c.ID = l.next
	l.waiting[c.ID] = ch
	b, err := json.Marshal(c)
	if err == nil {
		_, err = l.in.Write(append(b, '\n'))
	}
	l.mu.Unlock()
	if err != nil {
		return leadshim.Envelope{}, time.Time{}, time.Time{}, fmt.Errorf("bench lead: %w", err)
	}
	select {
	case a := <-ch:
		start, end := time.Unix(0, a.Start), time.Unix(0, a.End)
		if a.Err != "" {
			return a.Env, start, end, errors.New(a.Err)
		}
		return a.Env, start, end, nil
	case <-l.gone:
		return leadshim.Envelope{}, time.Time{}, time.Time{}, fmt.Errorf("bench lead: the lead process ended (%s); its stderr is in the progress output", l.exit())
	case <-ctx.Done():
		return leadshim.Envelope{}, time.Time{}, time.Time{}, ctx.Err()
	}
}

// close ends the lead: its input closes, it answers what is in flight and
// exits.
func (l *leadProc) close() {
	l.in.Close()
	select {
	case <-l.done:
	case <-time.After(10 * time.Second):
		l.stop(time.Second)
	}
}
