package mcpserver

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/fleetd/fleetd/projections"
)

// AnswerInput is the answer tool's arguments.
type AnswerInput struct {
	Agent  string `json:"agent" jsonschema:"the agent blocked on a dialog (roster shows each blocked agent's dialog: its question and options)"`
	Option int    `json:"option" jsonschema:"the option to choose, numbered from 1 as the dialog's options are listed"`
}

func (s *Server) addAnswerTool() {
	mcp.AddTool(s.mcp, &mcp.Tool{
		Name: "answer",
		Description: "Answer the permission dialog one of your workers is blocked on (roster shows it: the question, what it is about, " +
			"the options). Choose an option by its number: its gateway types it and the tool returns once the dialog went. " +
			"Answering No stops the worker's turn (it fails as denied). You may answer an agent you spawned, or one of a lower tier than yours.",
	}, s.answer)
}

func (s *Server) answer(ctx context.Context, _ *mcp.CallToolRequest, in AnswerInput) (*mcp.CallToolResult, any, error) {
	roster, err := s.cfg.Fleet.Roster(ctx)
	if err != nil {
		return nil, nil, toolError("answer", err)
	}
	if err := mayAnswer(roster, s.cfg.Agent, in.Agent); err != nil {
		return nil, nil, err
	}
	res, err := s.cfg.Fleet.Answer(ctx, in.Agent, in.Option, s.cfg.Agent)
	if err != nil {
		return nil, nil, toolError("answer", err)
	}
	return result(res)
}

// mayAnswer says whether caller may answer target's dialog: its workers —
// an agent it spawned (its parent), or one of a lower tier — are; a caller
// outside the roster (a person's lead session) answers any, as `fleetd
// answer` does with the shim's token.
func mayAnswer(roster []projections.Agent, caller, target string) error {
	var me, it *projections.Agent
	for i := range roster {
		switch roster[i].Agent {
		case caller:
			me = &roster[i]
		case target:
			it = &roster[i]
		}
	}
	switch {
	case it == nil:
		return fmt.Errorf("answer: no agent %q in the roster", target)
	case me == nil, it.Parent == caller, it.Tier < me.Tier:
		return nil
	}
	return fmt.Errorf("answer: %s is not one of your workers (you did not spawn it, and its tier %d is not below yours, %d): its own lead answers it", target, it.Tier, me.Tier)
}
