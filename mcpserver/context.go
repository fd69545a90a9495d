package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetd/fleetd/leadshim"
)

// ContextInput is the context tool's arguments.
type ContextInput struct {
	Job    string   `json:"job" jsonschema:"the job whose context store to read or add to (the job id a task of yours names)"`
	Action string   `json:"action" jsonschema:"get: list items (all, or those select names); put: add an item (key, text, tags), replacing an earlier one with the same key"`
	Select []string `json:"select,omitempty" jsonschema:"for get: item keys and tag:<tag> selectors; empty lists every item"`
	Key    string   `json:"key,omitempty" jsonschema:"for put: the item's key"`
	Tags   []string `json:"tags,omitempty" jsonschema:"for put: tags later selectors (tag:<tag>) can pick the item by"`
	Text   string   `json:"text,omitempty" jsonschema:"for put: the item's text, what a later slice hands to a task"`
}

func (s *Server) addContextTool() {
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name: "context",
		Description: "Read or add to a job's context store: the items (key, tags, text) fleetd slices into the tasks of that job. " +
			"action get lists them (or those select names); action put adds one, so later tasks that select its key or a tag get it. " +
			"A send with job and context selectors hands a worker exactly those items.",
	}, s.context)
}

func (s *Server) context(ctx context.Context, _ *mcp.CallToolRequest, in ContextInput) (*mcp.CallToolResult, any, error) {
	if strings.TrimSpace(in.Job) == "" {
		return nil, nil, fmt.Errorf("context: job is empty: name the job")
	}
	switch in.Action {
	case "get":
		items, err := s.cfg.Fleet.Context(ctx, in.Job, in.Select)
		if err != nil {
			return nil, nil, toolError("context get", err)
		}
		return result(items)
	case "put":
		if strings.TrimSpace(in.Key) == "" {
			return nil, nil, fmt.Errorf("context put: key is empty: name the item")
		}
		if err := s.checkText("context put: text", in.Text); err != nil {
			return nil, nil, err
		}
		it, err := s.cfg.Fleet.PutContext(ctx, in.Job, leadshim.ContextPut{Key: in.Key, Tags: in.Tags, Text: in.Text, From: s.cfg.Agent})
		if err != nil {
			return nil, nil, toolError("context put", err)
		}
		return result(it)
	}
	return nil, nil, fmt.Errorf("context: action %q: want get or put", in.Action)
}
