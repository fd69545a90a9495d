package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"
)

func main() {
	var o options
	flag.StringVar(&o.out, "o", "docs/dashboard.png", "where to write the PNG")
	flag.StringVar(&o.fleetd, "fleetd", "", "the fleetd binary to run (default: build ./cmd/fleetd)")
	flag.StringVar(&o.view, "view", "fleet", "which view to capture (fleet, turns, jobs, log, cost)")
	flag.IntVar(&o.agents, "agents", 6, "the demo's --agents")
	flag.IntVar(&o.tasks, "tasks", 18, "the demo's --tasks")
	flag.DurationVar(&o.think, "think", 4*time.Second, "the demo's --think: long enough to catch agents working")
	flag.IntVar(&o.width, "width", 1200, "viewport width, CSS pixels")
	flag.IntVar(&o.height, "height", 500, "viewport height, CSS pixels (the default fits the actions bar and the demo's six agents)")
	flag.DurationVar(&o.timeout, "timeout", 3*time.Minute, "give up after this long")
	flag.StringVar(&o.dialog, "dialog", "", "also write the control room answering a permission prompt to this PNG (e.g. docs/dashboard-dialog.png)")
	flag.IntVar(&o.dialogHeight, "dialog-height", 980, "the dialog picture's viewport height, CSS pixels (fits the agent view's dialog and screen)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := o.run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "dashshot:", err)
		os.Exit(1)
	}
}

type options struct {
	out, fleetd, view string
	agents, tasks     int
	think, timeout    time.Duration
	width, height     int
	// dialog, when set, is where the second picture goes: an agent of
	// the demo blocked on its permission dialog, in its agent view.
	dialog       string
	dialogHeight int
}

// dashboardLine is the demo's line naming the dashboard's URL.
var dashboardLine = regexp.MustCompile(`dashboard: (http://\S+/)`)

func (o options) run(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	browserPath, err := chromium()
	if err != nil {
		return err
	}
	if o.fleetd == "" {
		dir, err := os.MkdirTemp("", "dashshot-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		o.fleetd = filepath.Join(dir, "fleetd")
		build := exec.CommandContext(ctx, "go", "build", "-o", o.fleetd, "github.com/fleetd/fleetd/cmd/fleetd")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build fleetd: %w", err)
		}
	}

	// The demo stays up (--keep) so the page never outlives the fabric;
	// it is stopped as a user would, with an interrupt.
	demo := exec.Command(o.fleetd, "demo", "--plain", "--keep",
		"--agents", fmt.Sprint(o.agents), "--tasks", fmt.Sprint(o.tasks), "--think", o.think.String(),
		"--timeout", o.timeout.String())
	demo.Stderr = os.Stderr
	stdout, err := demo.StdoutPipe()
	if err != nil {
		return err
	}
	if err := demo.Start(); err != nil {
		return fmt.Errorf("start fleetd demo: %w", err)
	}
	exited := make(chan error, 1)
	urlc := make(chan string, 1)
	go func() {
		// Echo the demo's report, and pick the dashboard's URL out of it.
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			fmt.Fprintln(os.Stderr, sc.Text())
			if m := dashboardLine.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case urlc <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, stdout)
		exited <- demo.Wait()
	}()
	defer func() {
		demo.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			demo.Process.Kill()
			<-exited
		}
	}()

	var base string
	select {
	case base = <-urlc:
	case err := <-exited:
		return fmt.Errorf("fleetd demo ended before it served the dashboard: %v", err)
	case <-ctx.Done():
		return ctx.Err()
	}
	png, err := o.shoot(ctx, browserPath, base+"?view="+o.view)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(o.out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(o.out, png, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "dashshot: wrote %s (%d bytes)\n", o.out, len(png))
	if o.dialog == "" {
		return nil
	}
	png, err = o.shootDialog(ctx, browserPath, base)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(o.dialog), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(o.dialog, png, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "dashshot: wrote %s (%d bytes)\n", o.dialog, len(png))
	return nil
}

// busy holds once the fleet is visibly at work: in the fleet view, half
// the agents working and every agent with a turn's cost behind it (the
// demo's second round), so every column has something in it. Other views
// need only to be live.
const busy = `document.getElementById('status') && document.getElementById('status').textContent.includes('live') && (
  new URLSearchParams(location.search).get('view') !== 'fleet' || (rows => rows.length > 0 &&
    rows.filter(r => r.dataset.state === 'working').length * 2 >= rows.length &&
    rows.every(r => /[1-9]/.test(r.cells[6].textContent)))(Array.from(document.querySelectorAll('tr.agent'))))`

// browser starts a headless Chromium with a viewport of width × height;
// cancel ends it.
func (o options) browser(ctx context.Context, browserPath string, height int) (context.Context, context.CancelFunc) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browserPath),
		chromedp.NoSandbox, // often root in a container
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.WindowSize(o.width, height),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Env("TZ=UTC"),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	bctx, cancel := chromedp.NewContext(actx)
	return bctx, func() { cancel(); cancelAlloc() }
}

// shoot opens u in a headless Chromium and captures the viewport once the
// page shows the fleet at work.
func (o options) shoot(ctx context.Context, browserPath, u string) ([]byte, error) {
	bctx, cancel := o.browser(ctx, browserPath, o.height)
	defer cancel()
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(int64(o.width), int64(o.height)), chromedp.Navigate(u)); err != nil {
		return nil, fmt.Errorf("open %s: %w", u, err)
	}
	if err := chromedp.Do(bctx, chromedp.Poll[chromedp.Void](busy,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute))); err != nil {
		return nil, fmt.Errorf("waiting for the fleet at work on %s: %w", u, err)
	}
	png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	return png, nil
}

// blockedPrompt is the turn the dialog picture's agent blocks on: the sim
// agent asks permission for a tool on "[block]", as Claude Code does.
const blockedPrompt = "run the release checks before tagging [block]"

// shootDialog captures the control room with a permission prompt: one of
// the demo's agents is sent a turn that stops on a permission dialog, and
// its agent view — the dialog's question and options, the agent's screen
// with the dialog on it — is captured before option 1 is clicked.
// Then it is clicked, and the picture is kept only if the dialog went:
// the picture shows a flow that works.
func (o options) shootDialog(ctx context.Context, browserPath, base string) ([]byte, error) {
	bctx, cancel := o.browser(ctx, browserPath, o.dialogHeight)
	defer cancel()
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(int64(o.width), int64(o.dialogHeight)), chromedp.Navigate(base)); err != nil {
		return nil, fmt.Errorf("open %s: %w", base, err)
	}
	agent, err := chromedp.Run(bctx, chromedp.Poll[string](`(r => r ? r.dataset.agent : false)(document.querySelector('tr.agent'))`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(time.Minute)))
	if err != nil {
		return nil, fmt.Errorf("find an agent on %s: %w", base, err)
	}
	if err := send(ctx, base, agent, blockedPrompt); err != nil {
		return nil, err
	}
	u := base + "?view=agent&id=" + agent
	const blocked = `document.querySelector('#dialog-options button.answer[data-option="1"]') !== null &&
  (p => p && p.textContent.includes('Do you want to proceed?'))(document.getElementById('agent-screen'))`
	if err := chromedp.Do(bctx, chromedp.Navigate(u), chromedp.Poll[chromedp.Void](blocked,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(2*time.Minute))); err != nil {
		return nil, fmt.Errorf("waiting for %s's dialog on %s: %w", agent, u, err)
	}
	option1 := `#dialog-options button.answer[data-option="1"]`
	png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	const answered = `document.getElementById('agent-dialog') === null && document.getElementById('action-result').dataset.code === 'answered'`
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS(option1)), chromedp.Poll[chromedp.Void](answered,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(time.Minute))); err != nil {
		return nil, fmt.Errorf("answering %s's dialog from the page: %w", agent, err)
	}
	return png, nil
}

// send queues text for agent through the demo's shim (loopback, no token:
// as a script would), without waiting for the reply.
func send(ctx context.Context, base, agent, text string) error {
	body, _ := json.Marshal(map[string]any{"to": agent, "from": "lead", "text": text, "wait": false})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"message", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("send to %s: %w", agent, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return fmt.Errorf("send to %s: %s %s", agent, resp.Status, b)
	}
	return nil
}

// chromium finds the browser: $FLEET_CHROMIUM, else chromium or Chrome on
// PATH.
func chromium() (string, error) {
	if p := os.Getenv("FLEET_CHROMIUM"); p != "" {
		return p, nil
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no Chromium on PATH (apt-get install chromium, or set FLEET_CHROMIUM)")
}
