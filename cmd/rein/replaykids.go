package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/tool"
)

// replaySpawnTool stands in for the spawn tool in a replay: a call the
// record links to a subagent's session replays that session, in the same
// workspace, with its own recorded responses, and returns its answer;
// without the child's log (a file) the call returns what the record
// says it returned.
func replaySpawnTool(rec *recording, o *replayOptions, rep *replayReport, prefix string) tool.Tool {
	spec := agent.SpawnTool(nil).Spec()
	return &tool.Func{ToolSpec: spec, Fn: func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
		start := rec.spawns[call.ID]
		recorded, hasResult := rec.results[call.ID]
		if start == nil || o.Children == nil {
			if !hasResult {
				return tool.Errorf("the record has no subagent for this call"), nil
			}
			fmt.Fprintf(o.Info, "%s  (subagent %s: its log is not in the record; its recorded result is used)\n", prefix, call.ID)
			return tool.Text(recorded), nil
		}
		events, err := o.Children(start.ChildSession)
		if err != nil {
			return nil, fmt.Errorf("read the subagent session %s: %w", start.ChildSession, err)
		}
		child := *o
		child.Out = &linePrefixer{w: o.Info, prefix: prefix + "  [" + start.Name + "] "}
		child.Info, child.TTY = child.Out, nil
		answer, err := replayIn(ctx, events, &child, rep, prefix+start.Name+": ")
		if err != nil {
			return nil, err
		}
		return tool.Text(answer), nil
	}}
}

// linePrefixer starts every line written through it with prefix.
type linePrefixer struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	mid    bool // within a line
}

func (p *linePrefixer) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out strings.Builder
	for _, line := range strings.SplitAfter(string(b), "\n") {
		if line == "" {
			continue
		}
		if !p.mid {
			out.WriteString(p.prefix)
		}
		out.WriteString(line)
		p.mid = !strings.HasSuffix(line, "\n")
	}
	if _, err := io.WriteString(p.w, out.String()); err != nil {
		return 0, err
	}
	return len(b), nil
}
