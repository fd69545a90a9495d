package events

import (
	"fmt"
	"strings"
)

// Describe renders an event as one readable line: its time, stream
// sequence, category, aggregate and kind, then what its data says (what
// `fleetd tail` prints).
func Describe(ev Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s #%-6d %-8s %-14s %-10s", ev.Time.Local().Format("15:04:05.000"), ev.Seq, ev.Type().Category(), ev.Subject, ev.Type().Kind())
	turn := ""
	if ev.CorrelationID != "" {
		turn = " turn=" + ev.CorrelationID
	}
	switch d := ev.Data.(type) {
	case AgentRegistered:
		fmt.Fprintf(&b, " host=%s pane=%s role=%s tier=%d model=%s", d.Host, d.Pane, d.Role, d.Tier, d.Model)
		if d.Worktree.Path != "" {
			fmt.Fprintf(&b, " worktree=%s branch=%s", d.Worktree.Path, d.Worktree.Branch)
		}
		if d.Sandbox != "" {
			fmt.Fprintf(&b, " sandbox=%s", d.Sandbox)
		}
	case AgentStatusChanged:
		fmt.Fprintf(&b, " %s (from %s)", d.Status, d.Source)
		if d.Violation != "" {
			fmt.Fprintf(&b, " BOUNDARY: %s", d.Violation)
		}
	case AgentQueued:
		if d.Command != "" {
			fmt.Fprintf(&b, "%s from=%s command %s", turn, d.From, d.Command)
		} else {
			fmt.Fprintf(&b, "%s from=%s %q", turn, d.From, clip(d.Text, 60))
		}
	case AgentTyped:
		fmt.Fprintf(&b, "%s pane=%s via %s", turn, d.Pane, d.Method)
		if d.Delivery != "" {
			fmt.Fprintf(&b, " as %s", d.Delivery)
		}
		if d.Enter > 0 {
			b.WriteString(" (one more Enter)")
		}
	case AgentSubmitted:
		fmt.Fprintf(&b, "%s via %s prompt_id=%s", turn, d.Via, d.PromptID)
	case AgentReplied:
		fmt.Fprintf(&b, "%s %q tokens=%d/%d", turn, clip(d.Reply, 60), d.Tokens.In, d.Tokens.Out)
		if w := d.Worktree; w.Head != "" {
			fmt.Fprintf(&b, " %s@%.8s ahead=%d dirty=%d", w.Branch, w.Head, w.Ahead, w.Dirty)
		}
	case AgentUsage:
		fmt.Fprintf(&b, " prompt_id=%s tokens=%d/%d", d.PromptID, d.Tokens.In, d.Tokens.Out)
	case AgentFailed:
		fmt.Fprintf(&b, "%s %s: %s", turn, d.Reason, d.Message)
	case AgentSession:
		fmt.Fprintf(&b, " %s session=%s %s", d.State, d.SessionID, d.Source)
	case AgentExited:
		fmt.Fprintf(&b, " pane=%s %s", d.Pane, d.Reason)
		switch w := d.Worktree; {
		case w.Removed:
			fmt.Fprintf(&b, "; worktree %s removed", w.Path)
		case w.Kept != "":
			fmt.Fprintf(&b, "; worktree %s KEPT: %s", w.Path, w.Kept)
		}
	case AgentDeferred:
		fmt.Fprintf(&b, "%s %s: %s", turn, d.Reason, d.Message)
	case AgentRestart:
		fmt.Fprintf(&b, " %s #%d %s", d.State, d.Attempt, d.Cause)
		if d.Delay > 0 {
			fmt.Fprintf(&b, " in %v", d.Delay)
		}
		if d.Pane != "" {
			fmt.Fprintf(&b, " pane=%s", d.Pane)
		}
		if d.Resume != "" {
			fmt.Fprintf(&b, " resume=%s", d.Resume)
		}
		if d.Message != "" {
			fmt.Fprintf(&b, ": %s", d.Message)
		}
	case AgentReleased:
		fmt.Fprintf(&b, "%s back to role:%s (release %d) %s: %s", turn, d.Role, d.Attempt, d.Reason, d.Message)
	case AgentAttention:
		if d.Reason == "" {
			b.WriteString(" cleared")
		} else {
			fmt.Fprintf(&b, " %s: %s", d.Reason, d.Detail)
		}
	case AgentDialog:
		switch d.State {
		case DialogOpen:
			fmt.Fprintf(&b, " open %q %s %q", d.Title, d.Question, d.Options)
		case DialogAnswered:
			fmt.Fprintf(&b, " answered %d by %s", d.Answer, d.By)
		default:
			fmt.Fprintf(&b, " %s", d.State)
			if d.Message != "" {
				fmt.Fprintf(&b, ": %s", d.Message)
			}
		}
	case AgentAnswer:
		fmt.Fprintf(&b, " option %d by %s", d.Option, d.By)
	case RoleQueued:
		fmt.Fprintf(&b, "%s from=%s %q", turn, d.From, clip(d.Text, 60))
	case RoleCancelled:
		fmt.Fprintf(&b, "%s by %s", turn, d.By)
	case AgentInbox:
		fmt.Fprintf(&b, " %s from=%s %q", ev.ID, d.From, clip(d.Text, 60))
		if d.ReplyTo != "" {
			fmt.Fprintf(&b, " reply_to=%s", d.ReplyTo)
		}
		if d.Turn != "" {
			fmt.Fprintf(&b, " turn=%s %s", d.Turn, d.Status)
		}
	case AgentInboxRead:
		fmt.Fprintf(&b, " acknowledged through #%d", d.Through)
	case AgentBudgetWarning:
		describeBudget(&b, d.BudgetWarning)
	case RoleBudgetWarning:
		describeBudget(&b, d.BudgetWarning)
	case HostUp:
		if d.Heartbeat {
			b.WriteString(" heartbeat")
		} else {
			fmt.Fprintf(&b, " version=%s nats=%s pid=%d", d.Version, d.NATSURL, d.PID)
		}
	case HostDown:
		fmt.Fprintf(&b, " %s", d.Reason)
	case HostHerdr:
		fmt.Fprintf(&b, " connected=%t %s %s", d.Connected, d.Socket, d.Error)
	case JobCreated:
		fmt.Fprintf(&b, " %q tasks=%d", clip(d.Goal, 60), len(d.Tasks))
	case JobContext:
		fmt.Fprintf(&b, " key=%s tags=%v %dB", d.Key, d.Tags, d.Size)
	case JobSliced:
		fmt.Fprintf(&b, " task=%s items=%v %d/%dB", d.Task, d.Items, d.Bytes, d.Budget)
	case JobTask:
		fmt.Fprintf(&b, " task=%s %s agent=%s", d.Task, d.State, d.Agent)
	case JobDone:
		fmt.Fprintf(&b, " %s %s", d.Status, d.Error)
	}
	return b.String()
}

func describeBudget(b *strings.Builder, d BudgetWarning) {
	fmt.Fprintf(b, " %s %s at %d%%: %g of %g", d.Scope, d.Limit, d.Percent, d.Used, d.Max)
	if !d.FreesAt.IsZero() {
		fmt.Fprintf(b, ", frees at %s", d.FreesAt.Local().Format("15:04:05"))
	}
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
