package agent_test

import (
	"context"
	"io"
	"os"
	"testing"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/sandbox"
	"github.com/reinhq/rein/tool/shell"
)

// TestB66_AChildsBackgroundShellTaskIsKilledWhenTheParentCloses runs the
// real shell: a child starts a background task and ends; the task keeps
// running while the parent lives and is killed when the parent closes.
func TestB66_AChildsBackgroundShellTaskIsKilledWhenTheParentCloses(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("needs /proc")
	}
	sh := shell.New(&shell.Options{Policy: &sandbox.Policy{Root: t.TempDir()}, SpillDir: t.TempDir()})
	delegate := &tool.Func{ToolSpec: tool.Spec{Name: "delegate", Description: "starts a worker with a shell", Schema: []byte(`{"type":"object"}`)},
		Fn: func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
			res, err := agent.RunningAgent(ctx).Spawn(ctx, &agent.SpawnRequest{Name: "worker", Prompt: "task-S: start the server",
				Tools: []string{}, OwnTools: sh.Tools(), Closers: []io.Closer{sh}, CallID: call.ID})
			if err != nil {
				return nil, err
			}
			return tool.Text(res.Text), nil
		}}
	f := newFamily(t, &agent.Options{Tools: []tool.Tool{delegate}},
		llmtest.CallTool("c1", "delegate", `{}`), llmtest.Reply("done"))
	f.rt.route("task-S", llmtest.CallTool("s1", "shell", `{"command":"sleep 41.37","run_in_background":true}`), llmtest.Reply("server started"))
	if _, err := f.a.Run(context.Background(), &agent.RunRequest{Prompt: "go"}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if exits := sh.Drain(); len(exits) != 0 {
		t.Fatalf("the task ended with its child: %v", exits)
	}
	if h := ofType[*session.SubagentHandoff](readAll(t, f.store, f.a.Session())); len(h) != 1 {
		t.Errorf("want one subagent.handoff, got %+v", h)
	}
	f.close()
	exits := sh.Drain()
	if len(exits) != 1 || exits[0].Reason != "closed" {
		t.Errorf("after the parent closed, the task exits are %+v; want one closed", exits)
	}
}
