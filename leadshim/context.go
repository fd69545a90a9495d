package leadshim

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/fleetd/fleetd/events"
	"github.com/fleetd/fleetd/jobs"
)

// ContextItem is one entry of a job's context store (jobs.Item) as the
// shim shows it.
type ContextItem struct {
	Key        string   `json:"key"`
	Tags       []string `json:"tags,omitempty"`
	Text       string   `json:"text"`
	Provenance string   `json:"provenance,omitempty"`
	Size       int      `json:"size"`
	Seq        uint64   `json:"seq,omitempty"`
}

// ContextPut is the body of POST /jobs/{job}/context: an item that joins
// the job's context store (replacing an earlier one with its key), for
// later slices of the job's tasks.
type ContextPut struct {
	Key  string   `json:"key"`
	Tags []string `json:"tags,omitempty"`
	Text string   `json:"text"`
	// From names who added it: its provenance.
	From string `json:"from,omitempty"`
}

// jobOf is the {job} of the path, once it is known to exist.
func (s *Server) jobOf(r *http.Request) (string, *apiError) {
	job := r.PathValue("job")
	if err := events.ValidToken(job); err != nil {
		return "", fail(http.StatusBadRequest, "bad_job", "job: %v", err)
	}
	known, err := jobs.Exists(r.Context(), s.cfg.Log, job)
	if err != nil {
		return "", fail(http.StatusServiceUnavailable, "nats_unavailable", "%v", err)
	}
	if !known {
		return "", fail(http.StatusNotFound, "unknown_job", "no job %q in the log", job)
	}
	return job, nil
}

// getContext lists a job's context items: all, or those the select
// parameters name (keys, tag:T).
func (s *Server) getContext(w http.ResponseWriter, r *http.Request) {
	job, aerr := s.jobOf(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	store, err := jobs.LoadStore(r.Context(), s.cfg.Log, job)
	if err != nil {
		writeError(w, fail(http.StatusServiceUnavailable, "nats_unavailable", "%v", err))
		return
	}
	sel := jobs.ParseSelectors(r.URL.Query()["select"])
	all := len(sel.Keys) == 0 && len(sel.Tags) == 0
	out := []ContextItem{}
	for _, it := range store.Items() {
		if all || slices.Contains(sel.Keys, it.Key) || slices.ContainsFunc(it.Tags, func(t string) bool { return slices.Contains(sel.Tags, t) }) {
			out = append(out, ContextItem{Key: it.Key, Tags: it.Tags, Text: it.Text, Provenance: it.Provenance, Size: it.Size, Seq: it.Seq})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// putContext appends a JobContext event for the job.
func (s *Server) putContext(w http.ResponseWriter, r *http.Request) {
	job, aerr := s.jobOf(r)
	var body ContextPut
	if aerr == nil {
		aerr = decodeBody(r, &body)
	}
	lim := events.DefaultLimits()
	switch {
	case aerr != nil:
	case strings.TrimSpace(body.Key) == "" || len(body.Key) > lim.Line:
		aerr = fail(http.StatusBadRequest, "bad_key", `"key" names the item: 1 to %d bytes`, lim.Line)
	case strings.TrimSpace(body.Text) == "":
		aerr = fail(http.StatusBadRequest, "empty_text", "the item has no text")
	case len(body.Text) > s.cfg.MaxText:
		aerr = fail(http.StatusRequestEntityTooLarge, "text_too_large", "the text is %d bytes; at most %d", len(body.Text), s.cfg.MaxText)
	case len(body.From) > lim.ID:
		aerr = fail(http.StatusBadRequest, "bad_from", `"from" is %d bytes; at most %d`, len(body.From), lim.ID)
	}
	if aerr == nil {
		aerr = s.healthError()
	}
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	prov := "shim"
	if body.From != "" {
		prov = "agent:" + body.From
	}
	d := events.JobContext{Key: body.Key, Tags: body.Tags, Text: body.Text, Provenance: prov, Size: len(body.Text)}
	ack, err := s.cfg.Log.Append(r.Context(), events.Event{Subject: job, Source: s.source, CorrelationID: job, Data: d})
	if err != nil {
		if e := logError(err); e != nil {
			writeError(w, e)
			return
		}
		writeError(w, fail(http.StatusBadRequest, "bad_context", "%v", err))
		return
	}
	writeJSON(w, http.StatusCreated, ContextItem{Key: d.Key, Tags: d.Tags, Text: d.Text, Provenance: prov, Size: d.Size, Seq: ack.Seq})
}

// Context lists job's context items, all or those selectors name (item
// keys, tag:T).
func (c *Client) Context(ctx context.Context, job string, selectors []string) ([]ContextItem, error) {
	p := "/jobs/" + url.PathEscape(job) + "/context"
	if len(selectors) > 0 {
		p += "?" + url.Values{"select": selectors}.Encode()
	}
	var items []ContextItem
	err := c.Do(ctx, http.MethodGet, p, nil, &items)
	return items, err
}

// PutContext adds an item to job's context store.
func (c *Client) PutContext(ctx context.Context, job string, p ContextPut) (ContextItem, error) {
	var it ContextItem
	err := c.Do(ctx, http.MethodPost, "/jobs/"+url.PathEscape(job)+"/context", p, &it)
	return it, err
}
