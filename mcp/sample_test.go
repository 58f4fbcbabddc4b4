package mcp_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/mcp"
	"github.com/reinhq/rein/mcp/mcptest"
)

func TestSamplingApproved(t *testing.T) {
	model := llmtest.NewModel(llmtest.Reply("All quiet.").WithUsage(llm.Usage{Input: 12, Output: 3}))
	var approved []*mcp.SampleRequest
	var events eventLog[*mcp.Sampled]
	m := newManager(t, &mcp.Options{
		Servers: []mcp.ServerConfig{{Name: "host", NewTransport: inProcess(t, mcptest.NewHostServer(nil), nil)}},
		Events:  events.add,
		Sampling: &mcp.SamplingOptions{Model: model, ModelName: "test-model", MaxTokens: 500,
			Approve: func(ctx context.Context, req *mcp.SampleRequest) (bool, error) {
				approved = append(approved, req)
				return true, nil
			},
			Cost: func(u llm.Usage) float64 { return float64(u.Input+u.Output) / 1000 },
		},
	})
	res, err := m.Call(context.Background(), "host", "summarise", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.TextOf(), `test-model said "All quiet."`; got != want {
		t.Errorf("the server got %q, want %q", got, want)
	}
	if len(approved) != 1 || approved[0].Server != "host" {
		t.Fatalf("approval asked %d times: %+v", len(approved), approved)
	}
	reqs := model.Requests()
	if len(reqs) != 1 || reqs[0].MaxTokens != 500 || reqs[0].System[0].Text != "Be brief." || reqs[0].Messages[0].Text() != "Summarise the logs." {
		t.Errorf("the model got %+v, want the server's prompt with maxTokens capped at 500", reqs)
	}
	evs := events.all()
	want := &mcp.Sampled{Server: "host", Model: "test-model", System: "Be brief.", Prompt: []string{"user: Summarise the logs."}, Messages: 1,
		MaxTokens: 500, Approved: true, Usage: llm.Usage{Input: 12, Output: 3}, Cost: 0.015, Finish: "stop"}
	if len(evs) != 1 {
		t.Fatalf("Sampled events = %+v, want one", evs)
	}
	evs[0].Duration = 0
	if diff := cmp.Diff(want, evs[0]); diff != "" {
		t.Errorf("Sampled event (-want +got):\n%s", diff)
	}
}

func TestSamplingDenied(t *testing.T) {
	model := llmtest.NewModel(llmtest.Reply("never sent"))
	var events eventLog[*mcp.Sampled]
	for _, approve := range []func(context.Context, *mcp.SampleRequest) (bool, error){
		nil, // no approver denies
		func(context.Context, *mcp.SampleRequest) (bool, error) { return false, nil },
	} {
		m := newManager(t, &mcp.Options{
			Servers:  []mcp.ServerConfig{{Name: "host", NewTransport: inProcess(t, mcptest.NewHostServer(nil), nil)}},
			Events:   events.add,
			Sampling: &mcp.SamplingOptions{Model: model, Approve: approve},
		})
		_, err := m.Call(context.Background(), "host", "summarise", nil)
		if err == nil || !strings.Contains(err.Error(), "denied") {
			t.Errorf("a denied completion = %v, want the call to fail saying denied", err)
		}
	}
	if n := len(model.Requests()); n != 0 {
		t.Errorf("the model was asked %d times; a denied request must not reach it", n)
	}
	evs := events.all()
	if len(evs) != 2 || evs[0].Approved || evs[1].Approved || evs[0].Err == nil {
		t.Errorf("Sampled events = %+v, want two denials", evs)
	}
}

func TestRootsListAndChange(t *testing.T) {
	changed := make(chan struct{}, 4)
	work, err := mcp.DirRoot(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	m := newManager(t, &mcp.Options{
		Servers: []mcp.ServerConfig{{Name: "host", NewTransport: inProcess(t, mcptest.NewHostServer(changed), nil)}},
		Roots:   []mcp.Root{work},
	})
	res, err := m.Call(context.Background(), "host", "roots", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.TextOf() != work.URI || !strings.HasPrefix(work.URI, "file:///") {
		t.Errorf("roots = %q, want the workspace %s", res.TextOf(), work.URI)
	}
	extra, _ := mcp.DirRoot(t.TempDir())
	if err := m.SetRoots([]mcp.Root{extra}); err != nil {
		t.Fatal(err)
	}
	<-changed // the server was told
	res, err = m.Call(context.Background(), "host", "roots", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.TextOf() != extra.URI {
		t.Errorf("roots after SetRoots = %q, want %s", res.TextOf(), extra.URI)
	}
	if err := m.SetRoots([]mcp.Root{{URI: "https://example.com"}}); err == nil {
		t.Error("a root that is not a file:// URI was accepted")
	}
}
