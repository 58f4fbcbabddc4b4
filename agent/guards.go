package agent

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// Names of the built-in guards on their decisions.
const (
	guardRepeat     = "guard.repeat"
	guardToolBudget = "guard.tool-budget"
	guardOutput     = "guard.output"
)

func isGuard(hookName string) bool { return strings.HasPrefix(hookName, "guard.") }

// guards are the run's built-in handlers for Options.Limits, the last of
// the chain at the points they act on: the repeat guard and the per-tool
// budgets at pre-tool-use (after every edit), the step's output budget at
// tool-result. Their decisions are recorded like any other.
type guards struct {
	r         *runState
	limits    Limits
	set       *hook.Set // nil when no guard is on
	repeatKey string
	repeatN   int
	counts    map[string]int
	stepBytes int
	abort     *turnEnd // the end a guard's stop asks for
}

func newGuards(r *runState, l Limits) *guards {
	g := &guards{r: r, limits: l}
	if l.Repeat.Threshold > 0 {
		g.on().PreToolUse(guardRepeat, g.repeat)
	}
	if len(l.ToolCalls) > 0 {
		g.counts = map[string]int{}
		g.on().PreToolUse(guardToolBudget, g.budget)
	}
	if l.StepOutputBytes > 0 {
		g.on().ToolResult(guardOutput, g.output)
	}
	return g
}

func (g *guards) on() *hook.Set {
	if g.set == nil {
		g.set = new(hook.Set)
	}
	return g.set
}

// stopEnd is the end of a turn a gate handler stopped: the guard's own
// when a guard stopped it, else blocked with the handler's reason.
func (g *guards) stopEnd(by string, st *hook.Stop) *turnEnd {
	if isGuard(by) && g.abort != nil {
		end := g.abort
		g.abort = nil
		return end
	}
	return &turnEnd{reason: session.EndBlocked, msg: st.Reason}
}

// steer records a guard's steer and queues its message for the model.
func (g *guards) steer(ctx context.Context, in *hook.ToolInput, name, why, text string) {
	hook.Note(ctx, &session.HookDecision{Point: string(hook.PointPreToolUse), Hook: name, Decision: "steer", Reason: why, CallID: in.Call.ID})
	r := g.r
	r.a.mu.Lock()
	r.ctl.steers = append(r.ctl.steers, queued{[]llm.Part{&llm.Text{Text: text}}, session.SourceSystem})
	r.a.mu.Unlock()
}

// repeat trips on the same tool called with the same arguments
// Threshold times in a row.
func (g *guards) repeat(ctx context.Context, in *hook.ToolInput) (hook.GateDecision, error) {
	rg := g.limits.Repeat
	key := in.Call.Name + "\x00" + string(in.Call.Args)
	if key == g.repeatKey {
		g.repeatN++
	} else {
		g.repeatKey, g.repeatN = key, 1
	}
	if g.repeatN < rg.Threshold {
		return nil, nil
	}
	msg := fmt.Sprintf("%s was called with the same arguments %d times in a row", in.Call.Name, g.repeatN)
	switch rg.Action {
	case GuardBlock:
		return &hook.Deny{Reason: msg + "; try something else"}, nil
	case GuardAbort:
		g.abort = &turnEnd{reason: session.EndError, msg: msg, code: "repeat-guard", err: &TurnError{Reason: session.EndError, Code: "repeat-guard", Err: errors.New(msg)}}
		return &hook.Stop{Reason: msg}, nil
	}
	g.steer(ctx, in, guardRepeat, msg, msg+". Repeating it will not give a different result; change your approach.")
	return nil, nil
}

// budget caps the calls of one tool per turn.
func (g *guards) budget(ctx context.Context, in *hook.ToolInput) (hook.GateDecision, error) {
	tb, ok := g.limits.ToolCalls[in.Call.Name]
	if !ok || tb.Max <= 0 {
		return nil, nil
	}
	g.counts[in.Call.Name]++
	if g.counts[in.Call.Name] <= tb.Max {
		return nil, nil
	}
	msg := fmt.Sprintf("the budget of %d calls of %s in this turn is spent", tb.Max, in.Call.Name)
	if tb.Action == GuardSteer {
		g.steer(ctx, in, guardToolBudget, msg, "Note: "+msg+"; finish with what you have.")
		return nil, nil
	}
	return &hook.Deny{Reason: msg}, nil
}

// output applies the step's tool-output byte budget to a result: output
// past it is spilled to a file and the model gets a head and the path.
func (g *guards) output(_ context.Context, in *hook.ToolResultInput) (hook.ResultDecision, error) {
	limit, res := g.limits.StepOutputBytes, in.Result
	if res == nil {
		return nil, nil
	}
	text := textOf(res)
	if g.stepBytes+len(text) <= limit {
		g.stepBytes += len(text)
		return nil, nil
	}
	room := max(limit-g.stepBytes, 0)
	dir := g.r.a.opts.SpillDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "rein-spill")
	}
	spilled, err := tool.Spill(res, room, dir)
	if err != nil {
		g.r.a.log.Warn("spilling a tool result failed", "call", in.Call.ID, "err", err)
		spilled = &tool.Result{Parts: []llm.Part{&llm.Text{Text: text[:room] + fmt.Sprintf("\n[… %d bytes elided; saving them failed]", len(text)-room)}}, IsError: res.IsError, Meta: res.Meta}
	}
	g.stepBytes += room
	parts := append(spilled.Parts[:len(spilled.Parts):len(spilled.Parts)], &llm.Text{Text: "This step's tool output is over its budget; summarise what you need from the saved file instead of reading it all."})
	out := &tool.Result{Parts: parts, IsError: spilled.IsError, Meta: spilled.Meta}
	return &hook.RewriteResult{Result: out, Label: "spill", Reason: fmt.Sprintf("the step's tool output went over %d bytes", limit)}, nil
}
