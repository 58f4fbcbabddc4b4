package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
)

// result is one command's run and answer.
type result struct {
	e   *Entry
	out outcome
	ans answer
}

// call is one firing of an event.
type call struct {
	event string
	scope hook.Scope
	tool  string
	id    llm.CallID
	in    input
	env   []string // added to the commands' environment
}

// fire runs every entry of c.event that matches c.tool, in parallel, and
// returns their results in configuration order. A command that timed out
// or could not run is an error: the boundary fails closed.
func (r *Runner) fire(ctx context.Context, c *call) ([]result, error) {
	sel := r.selected(c)
	if len(sel) == 0 {
		return nil, nil
	}
	r.describe(ctx, c)
	payload, err := r.encodeInput(c)
	if err != nil {
		return nil, err
	}
	res := make([]result, len(sel))
	env := r.traceEnv(c)
	runOne := func(i int) {
		e := sel[i]
		res[i].e = e
		res[i].out = r.run(ctx, e.Command, e.Timeout, payload, entryEnv(e, env))
		if res[i].out.err == nil {
			res[i].ans = decode(c.event, &res[i].out)
		}
	}
	if len(sel) == 1 {
		runOne(0)
	} else {
		var wg sync.WaitGroup
		for i := range sel {
			wg.Go(func() { runOne(i) })
		}
		wg.Wait()
	}
	var errs []error
	for i := range res {
		if err := res[i].out.err; err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		for i := range res {
			r.report(ctx, c, &res[i], "")
		}
		return nil, errors.Join(errs...)
	}
	return res, nil
}

// entryEnv is the extra environment of e's command: the call's, and a
// plugin's $CLAUDE_PLUGIN_ROOT.
func entryEnv(e *Entry, env []string) []string {
	if e.PluginRoot == "" {
		return env
	}
	return append(slices.Clip(env), "CLAUDE_PLUGIN_ROOT="+e.PluginRoot)
}

// selected returns the entries of c.event that match c.tool, each command
// once, in configuration order.
func (r *Runner) selected(c *call) []*Entry {
	var sel []*Entry
	var seen []string
	for i := range r.entries {
		e := &r.entries[i]
		key := e.PluginRoot + "\x00" + e.Command // a plugin's ${CLAUDE_PLUGIN_ROOT} differs
		if e.Event != c.event || !e.matches(c.tool, r.opts.MCPServers) || containsStr(seen, key) {
			continue
		}
		seen = append(seen, key)
		sel = append(sel, e)
	}
	return sel
}

// describe fills in the fields of c's input every event carries: the
// session, turn, agent, working directory, event name and transcript.
func (r *Runner) describe(ctx context.Context, c *call) {
	c.in.SessionID = string(c.scope.Session)
	c.in.Turn = string(c.scope.Turn)
	c.in.Agent = c.scope.Agent
	c.in.Cwd = r.opts.Dir
	c.in.HookEventName = c.event
	switch {
	case c.scope.Session == "":
	case r.opts.Transcripts != nil:
		p, err := r.opts.Transcripts.Sync(ctx, c.scope.Session)
		if err != nil {
			r.opts.Logger.Warn("hook transcript not written", "err", err)
		}
		c.in.TranscriptPath = p
	case r.opts.Transcript != nil:
		c.in.TranscriptPath = r.opts.Transcript(c.scope.Session)
	}
}

// encodeInput encodes c's input, told in the hook format's vocabulary
// whichever settings file the entries come from.
func (r *Runner) encodeInput(c *call) ([]byte, error) {
	in := c.in
	if c.tool != "" {
		in.ToolName = theirName(c.tool, r.opts.MCPServers)
	}
	in.PermissionMode = r.opts.PermissionMode
	b, err := json.Marshal(&in)
	if err != nil {
		return nil, fmt.Errorf("command: encode %s hook input: %w", c.event, err)
	}
	return b, nil
}
