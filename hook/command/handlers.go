package command

import (
	"context"
	"strings"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
)

// prompt runs the UserPromptSubmit hooks: a block or a stop denies the
// prompt; the context they add is queued for Notices.
func (r *Runner) prompt(ctx context.Context, in *hook.PromptInput) (hook.PromptDecision, error) {
	text := textOf(in.Parts)
	c := &call{event: UserPromptSubmit, scope: in.Scope, in: input{Prompt: &text}}
	res, err := r.fire(ctx, c)
	if err != nil {
		return nil, err
	}
	var deny, ctxs []string
	for i := range res {
		a := &res[i].ans
		r.report(ctx, c, &res[i], "")
		switch {
		case a.stop:
			deny = append(deny, a.stopReason)
		case a.kind == kindBlock:
			deny = append(deny, a.reason)
		}
		ctxs = append(ctxs, a.context...)
	}
	if len(deny) > 0 {
		return &hook.Deny{Reason: strings.Join(deny, "; ")}, nil
	}
	r.addContext(ctxs)
	return nil, nil
}

// selects reports whether some entry of event matches the tool.
func (r *Runner) selects(event, tool string) bool {
	for i := range r.entries {
		if e := &r.entries[i]; e.Event == event && e.matches(tool, r.opts.MCPServers) {
			return true
		}
	}
	return false
}

// preToolUse runs the PreToolUse hooks that match the call: a block or a
// stop denies it, an updatedInput edits its arguments, and an allow or ask
// is kept for approval.
func (r *Runner) preToolUse(ctx context.Context, in *hook.ToolInput) (hook.GateDecision, error) {
	name := in.Call.Name
	if !r.selects(PreToolUse, name) {
		return nil, nil
	}
	c := &call{event: PreToolUse, scope: in.Scope, tool: name, id: in.Call.ID,
		in: input{ToolInput: outInput(name, in.Call.Args), ToolUseID: string(in.Call.ID)}}
	res, err := r.fire(ctx, c)
	if err != nil || len(res) == 0 {
		return nil, err
	}
	var deny, ctxs []string
	perm, permReason := kindContinue, ""
	args, edited := in.Call.Args, false
	for i := range res {
		a := &res[i].ans
		r.report(ctx, c, &res[i], "")
		if a.stop {
			r.setStop(turnKey{in.Session, in.Turn}, a.stopReason)
			deny = append(deny, a.stopReason)
		}
		switch a.kind {
		case kindBlock:
			deny = append(deny, a.reason)
		case kindAsk, kindAllow:
			if a.kind > perm {
				perm, permReason = a.kind, a.reason
			}
		}
		if a.update != nil {
			next, err := applyUpdate(name, args, a.update)
			if err != nil {
				deny = append(deny, "hook "+quote(res[i].e.Command)+" returned an updatedInput that is not a JSON object")
				continue
			}
			args, edited = next, true
		}
		ctxs = append(ctxs, a.context...)
	}
	r.addContext(ctxs)
	if len(deny) > 0 {
		return &hook.Deny{Reason: strings.Join(deny, "; ")}, nil
	}
	if perm != kindContinue {
		var d hook.ApprovalDecision = &hook.Allow{Reason: permReason}
		if perm == kindAsk {
			if permReason == "" {
				permReason = "a PreToolUse hook asks for approval"
			}
			d = &hook.Ask{Reason: permReason}
		}
		r.mu.Lock()
		r.approvals[in.Call.ID] = d
		r.mu.Unlock()
	}
	if edited {
		return &hook.EditArgs{Args: args}, nil
	}
	return nil, nil
}

// approval answers with the allow or ask a PreToolUse hook gave the call.
func (r *Runner) approval(ctx context.Context, in *hook.ToolInput) (hook.ApprovalDecision, error) {
	r.mu.Lock()
	d := r.approvals[in.Call.ID]
	delete(r.approvals, in.Call.ID)
	r.mu.Unlock()
	return d, nil
}

// dispatched forgets a permission answer of a call that never reached
// approval (denied, invalid after an edit).
func (r *Runner) dispatched(ctx context.Context, in *hook.DispatchedInput) error {
	r.mu.Lock()
	delete(r.approvals, in.Call.ID)
	r.mu.Unlock()
	return nil
}

// postToolUse runs PostToolUse, or PostToolUseFailure for an error
// result, after a call that ran: a block becomes context for the model, a
// stop ends the turn at step end.
func (r *Runner) postToolUse(ctx context.Context, in *hook.ToolResultInput) (hook.ResultDecision, error) {
	if in.Outcome != "" && in.Outcome != "execute" {
		return nil, nil // the call never ran: no post hook
	}
	event := PostToolUse
	if in.Result != nil && in.Result.IsError {
		event = PostToolUseFailure
	}
	name := in.Call.Name
	if !r.selects(event, name) {
		return nil, nil
	}
	c := &call{scope: in.Scope, tool: name, id: in.Call.ID,
		in: input{ToolInput: outInput(name, in.Call.Args), ToolUseID: string(in.Call.ID)}}
	if in.Result != nil && in.Result.IsError {
		c.in.Error = in.Result.TextOf()
	} else {
		c.in.ToolResponse = toolResponse(name, in.Call.Args, in.Result)
	}
	c.event = event
	res, err := r.fire(ctx, c)
	if err != nil {
		return nil, err
	}
	var ctxs []string
	for i := range res {
		a := &res[i].ans
		r.report(ctx, c, &res[i], "")
		if a.stop {
			r.setStop(turnKey{in.Session, in.Turn}, a.stopReason)
		}
		if a.kind == kindBlock {
			ctxs = append(ctxs, event+" hook on "+name+": "+a.reason)
		}
		ctxs = append(ctxs, a.context...)
	}
	r.addContext(ctxs)
	return nil, nil
}

// stop runs the Stop hooks as the turn is about to end: a stop a hook
// asked for earlier ends it at once; a block nudges the model to go on,
// and stop_hook_active tells the next Stop hook that one did.
func (r *Runner) stop(ctx context.Context, in *hook.FinalizeInput) (hook.FinalizeDecision, error) {
	k := turnKey{in.Session, in.Turn}
	if reason, ok := r.takeStop(k); ok {
		return &hook.Stop{Reason: reason}, nil
	}
	r.mu.Lock()
	active := r.nudged[k]
	r.mu.Unlock()
	c := &call{event: Stop, scope: in.Scope, in: input{StopHookActive: &active}}
	if in.Message != nil {
		t := textOf(in.Message.Parts)
		c.in.LastMessage = &t
	}
	res, err := r.fire(ctx, c)
	if err != nil {
		return nil, err
	}
	var block []string
	var stop *hook.Stop
	for i := range res {
		a := &res[i].ans
		switch {
		case a.stop:
			r.report(ctx, c, &res[i], "stop")
			if stop == nil {
				stop = &hook.Stop{Reason: a.stopReason}
			}
		case a.kind == kindBlock:
			r.report(ctx, c, &res[i], "nudge")
			block = append(block, a.reason)
		default:
			r.report(ctx, c, &res[i], "")
		}
		r.addContext(a.context)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if stop != nil {
		delete(r.nudged, k)
		return stop, nil
	}
	if len(block) > 0 {
		r.nudged[k] = true
		return &hook.Nudge{Text: strings.Join(block, "\n")}, nil
	}
	delete(r.nudged, k)
	return nil, nil
}

// stepEnd ends a turn a hook asked to stop (continue: false).
func (r *Runner) stepEnd(ctx context.Context, in *hook.StepEndInput) (hook.StepEndDecision, error) {
	if reason, ok := r.takeStop(turnKey{in.Session, in.Turn}); ok {
		return &hook.Stop{Reason: reason}, nil
	}
	return nil, nil
}

func textOf(parts []llm.Part) string {
	var b strings.Builder
	for _, p := range parts {
		if t, ok := p.(*llm.Text); ok {
			if b.Len() > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(t.Text)
		}
	}
	return b.String()
}
