package agent_test

import (
	"context"
	"iter"
	"strings"
	"testing"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// router is a model that serves each request from the scripted model of
// the first route whose key appears in the request's user messages, else
// from the parent's: parent and children share one agent's model but keep
// scripts of their own, whatever order they run in.
type router struct {
	parent *llmtest.Model
	keys   []string
	routes map[string]*llmtest.Model
}

func newRouter(parent *llmtest.Model) *router {
	return &router{parent: parent, routes: map[string]*llmtest.Model{}}
}

// route serves requests that mention key from a model playing script.
func (rt *router) route(key string, script ...llmtest.Entry) *llmtest.Model {
	m := llmtest.NewModel(script...)
	rt.keys = append(rt.keys, key)
	rt.routes[key] = m
	return m
}

func (rt *router) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	text := userText(req.Messages)
	for _, k := range rt.keys {
		if strings.Contains(text, k) {
			return rt.routes[k].Stream(ctx, req)
		}
	}
	return rt.parent.Stream(ctx, req)
}

func userText(msgs []llm.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		if m.Role == llm.RoleUser {
			for _, p := range m.Parts {
				if t, ok := p.(*llm.Text); ok {
					b.WriteString(t.Text)
					b.WriteByte('\n')
				}
			}
		}
	}
	return b.String()
}

// spawnCall is a model's call of the spawn tool.
func spawnCall(id, args string) llm.ToolCall {
	return llm.ToolCall{ID: llm.CallID(id), Name: agent.SpawnToolName, Args: []byte(args)}
}

// family is a parent agent over a router, with the spawn tool and tools.
type family struct {
	t     *testing.T
	a     *agent.Agent
	rt    *router
	store session.Store
}

func newFamily(t *testing.T, opts *agent.Options, parent ...llmtest.Entry) *family {
	t.Helper()
	if opts == nil {
		opts = &agent.Options{}
	}
	f := &family{t: t, rt: newRouter(llmtest.NewModel(parent...)), store: session.NewMemStore()}
	opts.Model, opts.Provider, opts.ModelName, opts.Store = f.rt, llmtest.Provider, "scripted", f.store
	opts.Tools = append([]tool.Tool{agent.SpawnTool(nil)}, opts.Tools...)
	a, err := agent.New(opts)
	if err != nil {
		t.Fatalf("agent.New: %v", err)
	}
	f.a = a
	return f
}

// start runs prompt in the background; the result arrives on the channel.
func (f *family) start(prompt string) <-chan *agent.Result {
	done := make(chan *agent.Result, 1)
	go func() {
		res, _ := f.a.Run(context.Background(), &agent.RunRequest{Prompt: prompt})
		done <- res
	}()
	return done
}

// close closes the parent and checks every log in the store is balanced.
func (f *family) close() {
	f.t.Helper()
	if err := f.a.Close(); err != nil {
		f.t.Errorf("Close: %v", err)
	}
	infos, err := f.store.List(context.Background())
	if err != nil {
		f.t.Fatalf("List: %v", err)
	}
	for _, in := range infos {
		evs := readAll(f.t, f.store, in.ID)
		if err := session.Balanced(evs); err != nil {
			f.t.Errorf("log of %s not balanced: %v\n%s", in.ID, err, dump(evs))
		}
	}
}

// blockTool is a tool whose calls wait until release is closed or their
// context is done; started gets one value per call that began.
type blockTool struct {
	name    string
	started chan struct{}
	release chan struct{}
}

func newBlockTool(name string) *blockTool {
	return &blockTool{name: name, started: make(chan struct{}, 16), release: make(chan struct{})}
}

func (b *blockTool) tool() tool.Tool {
	return &tool.Func{ToolSpec: tool.Spec{Name: b.name, Description: "waits", Schema: []byte(`{"type":"object"}`)},
		Fn: func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
			b.started <- struct{}{}
			select {
			case <-b.release:
				return tool.Text("released"), nil
			case <-ctx.Done():
				return nil, context.Cause(ctx)
			}
		}}
}
