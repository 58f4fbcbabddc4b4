package agent_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// remoteTool is a tool that says where it comes from, as MCP tools do.
type remoteTool struct{ tool.Func }

func (remoteTool) Origin() string { return "mcp" }

func remote(name, answer string) tool.Tool {
	return remoteTool{tool.Func{
		ToolSpec: tool.Spec{Name: name, Schema: []byte(`{"type":"object"}`), Annotations: &tool.Annotations{ReadOnly: true}},
		Fn:       func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text(answer), nil },
	}}
}

func toolNames(req *llm.Request) []string {
	var names []string
	for _, t := range req.Tools {
		names = append(names, t.Name)
	}
	return names
}

func TestDynamicToolsChangeBetweenSteps(t *testing.T) {
	first, _ := tool.NewSet(remote("mcp_docs_search", "found"))
	second, _ := tool.NewSet(remote("mcp_docs_search", "found"), remote("mcp_docs_fetch", "page"))
	var current atomic.Pointer[tool.Set]
	current.Store(first)
	// The server announces a change while the first call runs.
	announce := &tool.Func{
		ToolSpec: tool.Spec{Name: "announce", Schema: []byte(`{"type":"object"}`), Annotations: &tool.Annotations{ReadOnly: true}},
		Fn: func(context.Context, *tool.Call) (*tool.Result, error) {
			current.Store(second)
			return tool.Text("ok"), nil
		},
	}
	h := newHarness(t, &agent.Options{
		Tools:        []tool.Tool{announce},
		DynamicTools: func() []*tool.Set { return []*tool.Set{current.Load()} },
	},
		llmtest.CallTools(call("c1", "announce", `{}`), call("c2", "mcp_docs_search", `{}`)),
		llmtest.CallTool("c3", "mcp_docs_fetch", `{}`),
		llmtest.Reply("done"))
	h.run("look it up")

	reqs := h.m.Requests()
	if got := toolNames(reqs[0]); !slices.Equal(got, []string{"announce", "mcp_docs_search"}) {
		t.Errorf("first request offers %v", got)
	}
	if got := toolNames(reqs[1]); !slices.Equal(got, []string{"announce", "mcp_docs_search", "mcp_docs_fetch"}) {
		t.Errorf("after the change the request offers %v", got)
	}
	evs := h.events()
	if r := results(evs)["c3"]; resultText(r) != "page" {
		t.Errorf("the new tool answered %q", resultText(r))
	}
	headers := ofType[*session.RequestHeader](evs)
	if len(headers) != 2 || headers[1].Reason != "change" || !slices.Contains(headers[1].Tools, "mcp_docs_fetch") {
		t.Errorf("request headers = %+v; want the change recorded", headers)
	}
	origins := map[llm.CallID]string{}
	for _, c := range ofType[*session.ToolCall](evs) {
		origins[c.CallID] = c.Origin
	}
	if origins["c1"] != "native" || origins["c2"] != "mcp" || origins["c3"] != "mcp" {
		t.Errorf("origins = %v, want native for rein's tool and mcp for the server's", origins)
	}
}

func TestHostRecordsReachTheLogAndNothingElse(t *testing.T) {
	var pending []session.Payload
	pending = append(pending,
		&session.MCPEvent{Kind: "mcp:bootstrap:end", Server: "docs", Detail: []byte(`{"tools":2}`)},
		&session.UserMessage{Parts: []llm.Part{&llm.Text{Text: "smuggled prompt"}}}, // dropped
	)
	h := newHarness(t, &agent.Options{Records: func() []session.Payload {
		out := pending
		pending = nil
		return out
	}}, llmtest.Reply("ok"))
	h.run("hello")
	evs := h.events()
	got := ofType[*session.MCPEvent](evs)
	if len(got) != 1 || got[0].Server != "docs" || string(got[0].Detail) != `{"tools":2}` {
		t.Errorf("mcp.event records = %+v", got)
	}
	for _, u := range ofType[*session.UserMessage](evs) {
		if partsText(u.Parts) == "smuggled prompt" {
			t.Error("a host record added a user message")
		}
	}
	if containsText(h.m.Requests()[0], "smuggled") {
		t.Error("the model saw a dropped record")
	}
}

// A typed tool gets the loop's coerced arguments and does not validate
// them a second time; what it decodes is what the log says ran.
func TestB13_TypedToolRunsOnCoercedArguments(t *testing.T) {
	type in struct {
		Count int  `json:"count"`
		Loud  bool `json:"loud,omitempty"`
	}
	var got in
	counter, err := tool.New("count", "Count.", func(_ context.Context, v in, _ *tool.Call) (*tool.Result, error) {
		got = v
		return tool.Text("counted"), nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{counter}},
		llmtest.CallTool("c1", "count", `{"count":"5","loud":"true"}`), llmtest.Reply("ok"))
	h.run("count")
	if got != (in{Count: 5, Loud: true}) {
		t.Errorf("the tool decoded %+v, want {5 true}", got)
	}
	calls := ofType[*session.ToolCall](h.events())
	if len(calls) != 1 || len(calls[0].Coerced) != 2 || string(calls[0].Args) != `{"count":5,"loud":true}` {
		t.Errorf("tool.call = %+v, want the coerced arguments and both paths", calls)
	}
}
