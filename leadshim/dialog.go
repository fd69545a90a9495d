package leadshim

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/fleetd/fleetd/events"
)

// AnswerRequest is POST /agents/{id}/answer's body: the option (from 1)
// of the dialog the agent shows, and who answers (default "lead").
type AnswerRequest struct {
	Option int    `json:"option"`
	From   string `json:"from,omitempty"`
}

// DialogAnswer is how an answer went: the option typed, its label, and
// the dialog's question.
type DialogAnswer struct {
	Agent    string `json:"agent"`
	Option   int    `json:"option"`
	Label    string `json:"label"`
	Question string `json:"question"`
	By       string `json:"by"`
}

// answerWait bounds how long POST /agents/{id}/answer waits for the
// owning gateway to say how the answer went (it reads the screen, types
// the option, reads again until the dialog left: a few seconds at most).
const answerWait = 15 * time.Second

// postAnswer answers the dialog an agent is blocked on: it records the
// request (fleet.agent.<id>.answer), which the agent's own gateway types
// — only while the screen shows that dialog — and answers with how it
// went: 200 and the option's label once typed and gone, 409 not_answered
// with the gateway's reason, 409 no_dialog when the roster shows none, 400
// bad_option for an option the dialog does not have.
func (s *Server) postAnswer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var req AnswerRequest
	if aerr := decodeBody(r, &req); aerr != nil {
		writeError(w, aerr)
		return
	}
	a, ok := s.cfg.Views.Agent(id)
	if !ok {
		writeError(w, fail(http.StatusNotFound, "unknown_agent", "no agent %q in the roster", id))
		return
	}
	d := a.Dialog
	switch {
	case d == nil:
		writeError(w, fail(http.StatusConflict, "no_dialog", "agent %s shows no dialog to answer (status %s)", id, a.Status))
		return
	case req.Option < 1 || req.Option > len(d.Options):
		writeError(w, fail(http.StatusBadRequest, "bad_option", "option %d: %q has options %s", req.Option, d.Question, numbered(d.Options)))
		return
	}
	if req.From == "" {
		req.From = "lead"
	}
	if err := events.ValidAgentID(req.From); err != nil {
		writeError(w, fail(http.StatusBadRequest, "bad_from", `"from" names who answers: %v`, err))
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), answerWait)
	defer cancel()
	subject, err := events.AgentSubject(id, "dialog")
	if err != nil {
		writeError(w, fail(http.StatusBadRequest, "unknown_agent", "%v", err))
		return
	}
	// Follow the agent's dialog events from before the request is
	// recorded, so the gateway's word cannot come in between.
	f, err := s.cfg.Log.Follow(ctx, events.Query{Subjects: []string{subject}, New: true, Buffer: 8})
	if err != nil {
		writeError(w, logFailure(err))
		return
	}
	defer f.Stop()
	ack, err := s.cfg.Log.Append(ctx, events.Event{Subject: id, Source: s.source, Data: events.AgentAnswer{Option: req.Option, By: req.From}})
	if err != nil {
		writeError(w, logFailure(err))
		return
	}
	for {
		select {
		case ev, ok := <-f.Events():
			if !ok {
				writeError(w, fail(http.StatusServiceUnavailable, "unavailable", "the log stopped while waiting for the answer: %v", f.Err()))
				return
			}
			dd, isDialog := ev.Data.(events.AgentDialog)
			if !isDialog || ev.Seq < ack.Seq {
				continue
			}
			switch dd.State {
			case events.DialogAnswered:
				label := ""
				if dd.Answer >= 1 && dd.Answer <= len(dd.Options) {
					label = dd.Options[dd.Answer-1]
				}
				writeJSON(w, http.StatusOK, DialogAnswer{Agent: id, Option: dd.Answer, Label: label, Question: dd.Question, By: dd.By})
				return
			case events.DialogUnanswered:
				writeError(w, fail(http.StatusConflict, "not_answered", "agent %s: %s", id, dd.Message))
				return
			}
		case <-ctx.Done():
			writeError(w, fail(http.StatusGatewayTimeout, "timeout", "the answer is recorded (seq %d), but agent %s's gateway did not say how it went within %s: see the roster", ack.Seq, id, answerWait))
			return
		}
	}
}

// numbered lists a dialog's options as the answer names them.
func numbered(opts []string) string {
	var b strings.Builder
	for i, o := range opts {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d. %s", i+1, o)
	}
	return b.String()
}

// Answer answers the dialog agent shows with its option (from 1), as
// from; it returns once the agent's gateway typed it and the dialog went.
func (c *Client) Answer(ctx context.Context, agent string, option int, from string) (DialogAnswer, error) {
	var out DialogAnswer
	err := c.Do(ctx, http.MethodPost, "/agents/"+url.PathEscape(agent)+"/answer", AnswerRequest{Option: option, From: from}, &out)
	return out, err
}

// logFailure is the answer to a log that could not be read or written.
func logFailure(err error) *apiError {
	if e := logError(err); e != nil {
		return e
	}
	return fail(http.StatusServiceUnavailable, "unavailable", "%v", err)
}
