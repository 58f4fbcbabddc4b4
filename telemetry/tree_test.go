package telemetry_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/mcp"
	"github.com/reinhq/rein/telemetry"
	"github.com/reinhq/rein/tool"
)

// mcpServer is an in-process MCP server whose echo tool notes the
// traceparent each call's _meta carried.
type mcpServer struct {
	mu   sync.Mutex
	seen []string
}

func (s *mcpServer) transport(ctx context.Context) (sdk.Transport, error) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "srv", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "echo"}, func(ctx context.Context, req *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		tp, _ := req.Params.Meta["traceparent"].(string)
		s.mu.Lock()
		s.seen = append(s.seen, tp)
		s.mu.Unlock()
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
	})
	ct, st := sdk.NewInMemoryTransports()
	if _, err := srv.Connect(context.Background(), st, nil); err != nil {
		return nil, err
	}
	return ct, nil
}

// fullRun plays a run with a retry, a local and an MCP tool call in one
// step, a subagent, a tool that makes a typed decision and a final
// answer, then compacts; it returns the spans and what the MCP server
// and a hook were told of the trace.
func fullRun(t *testing.T) (spans tracetest.SpanStubs, mcpSeen []string, hookSeen string) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	obs := telemetry.New(&telemetry.Options{TracerProvider: tp})
	srv := &mcpServer{}
	m, err := mcp.New(&mcp.Options{TracerProvider: tp, Servers: []mcp.ServerConfig{{Name: "srv", NewTransport: srv.transport}}})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ctx := context.Background()
	mcpTools, err := m.Tools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	decider := llmtest.NewModel(llmtest.Reply(`{"probability":0.7,"reason":"likely"}`).WithUsage(llm.Usage{Input: 30, Output: 6}))
	judge, err := tool.New("judge", "Judge.", func(ctx context.Context, in struct{}, call *tool.Call) (*tool.Result, error) {
		v, err := agent.Decide(ctx, &agent.DecideRequest{Kind: agent.DecideProbability, Question: "it works", CallID: call.ID})
		if err != nil {
			return nil, err
		}
		return tool.Text(strconv.FormatFloat(v.Probability, 'f', -1, 64)), nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The trace context a post-tool hook of the MCP call gets: that call
	// waited for its span, so the span is known by then.
	hooks := obs.Register(new(hook.Set).PostTool("note", func(ctx context.Context, in *hook.PostToolInput) error {
		if in.Call.Name == "mcp_srv_echo" {
			hookSeen = obs.TraceParent(in.Scope, in.Call.ID)
		}
		return nil
	}))
	model := llmtest.NewModel(
		llmtest.Fail(&llm.ProviderError{Kind: llm.ErrOverloaded, Provider: "llmtest", StatusCode: 529, Message: "busy"}),
		llmtest.CallTools(llm.ToolCall{ID: "c1", Name: "echo", Args: []byte(`{"text":"a"}`)}, llm.ToolCall{ID: "c2", Name: "mcp_srv_echo", Args: []byte(`{"text":"b"}`)}),
		llmtest.CallTool("c3", agent.SpawnToolName, `{"task":"look around"}`),
		llmtest.Reply("the child looked"), // the child's answer
		llmtest.CallTool("c4", "judge", `{}`),
		llmtest.Reply("all done"),
		llmtest.Reply("summary"), // the compaction's
	)
	tools := append([]tool.Tool{echoTool(t), judge, agent.SpawnTool(nil)}, mcpTools...)
	a, err := agent.New(&agent.Options{
		Model: model, Provider: "llmtest", ModelName: "scripted", Tools: tools, Hooks: hooks,
		Decider: &agent.Target{Provider: "llmtest", Model: "cheap", Client: decider},
		Retry:   &agent.RetryPolicy{MaxRetries: 2, Base: time.Millisecond, Max: time.Millisecond, MaxWait: time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := a.Run(ctx, &agent.RunRequest{Prompt: "go"}); err != nil || res.Text != "all done" {
		t.Fatalf("Run: %v, %+v", err, res)
	}
	if _, err := a.Compact(ctx, nil); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	obs.Close()
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return exp.GetSpans(), srv.seen, hookSeen
}

func traceparentOf(sc trace.SpanContext) string {
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), c)
	return c["traceparent"]
}

// The span tree of a run with a retry, an MCP call, a subagent, a
// decision and a compaction: every span in one trace under invoke_agent,
// the MCP client span under its execute_tool span with its context sent
// to the server, the child's run under the parent's, the decision and
// the retry as span events, time to first chunk on the chat spans.
func TestSpanTreeOfAFullRun(t *testing.T) {
	spans, mcpSeen, hookSeen := fullRun(t)
	byName := map[string]tracetest.SpanStub{}
	count := map[string]int{}
	for _, s := range spans {
		byName[s.Name] = s
		count[s.Name]++
	}
	t.Logf("spans: %v", count)
	root := byName["invoke_agent rein"]
	child := byName["invoke_agent subagent"]
	parentOf := func(name string) string {
		for _, s := range spans {
			if s.SpanContext.SpanID() == byName[name].Parent.SpanID() {
				return s.Name
			}
		}
		return ""
	}
	for name, want := range map[string]string{
		"execute_tool echo": "invoke_agent rein", "execute_tool mcp_srv_echo": "invoke_agent rein",
		"tools/call echo":                     "execute_tool mcp_srv_echo",
		"execute_tool " + agent.SpawnToolName: "invoke_agent rein",
		"invoke_agent subagent":               "invoke_agent rein",
		"execute_tool judge":                  "invoke_agent rein",
	} {
		if got := parentOf(name); got != want {
			t.Errorf("the parent of %s is %q, want %q", name, got, want)
		}
	}
	if count["chat scripted"] != 5 { // four of the parent's, one of the child's
		t.Errorf("chat spans = %d, want 5", count["chat scripted"])
	}
	for _, s := range spans {
		if s.SpanContext.TraceID() != root.SpanContext.TraceID() && s.Name != "rein.compact" {
			t.Errorf("%s is in another trace", s.Name)
		}
	}
	if child.SpanContext.TraceID() != root.SpanContext.TraceID() {
		t.Error("the subagent's run is not in its parent's trace")
	}
	call := byName["tools/call echo"]
	if call.SpanKind != trace.SpanKindClient || attrs(call.Attributes)["mcp.method.name"] != "tools/call" {
		t.Errorf("tools/call span: kind %v, attributes %v", call.SpanKind, attrs(call.Attributes))
	}
	if len(mcpSeen) != 1 || mcpSeen[0] != traceparentOf(call.SpanContext) {
		t.Errorf("the MCP server got traceparent %q, want the client span's %s", mcpSeen, traceparentOf(call.SpanContext))
	}
	if mcpTool := byName["execute_tool mcp_srv_echo"]; hookSeen != traceparentOf(mcpTool.SpanContext) {
		t.Errorf("a hook of the MCP call got TRACEPARENT %q, want its execute_tool span's %s", hookSeen, traceparentOf(mcpTool.SpanContext))
	}
	judge := byName["execute_tool judge"]
	var decided map[string]string
	for _, e := range judge.Events {
		if e.Name == "rein.decision" {
			decided = attrs(e.Attributes)
		}
	}
	for k, v := range map[string]string{"rein.decision.kind": "probability", "rein.decision.value": "0.7", "gen_ai.request.model": "cheap", "gen_ai.usage.input_tokens": "30"} {
		if decided[k] != v {
			t.Errorf("decision event %s = %q, want %q (event %v)", k, decided[k], v, decided)
		}
	}
	var retries, timed int
	for _, s := range spans {
		if s.Name != "chat scripted" {
			continue
		}
		for _, e := range s.Events {
			if e.Name == "gen_ai.request.retry" {
				retries++
			}
		}
		if v, ok := attrs(s.Attributes)["gen_ai.response.time_to_first_chunk"]; ok {
			if f, err := strconv.ParseFloat(v, 64); err != nil || f < 0 {
				t.Errorf("time to first chunk = %q", v)
			}
			timed++
		}
	}
	if retries != 1 || timed != 4 { // the child's model is not wrapped by the parent's hooks
		t.Errorf("chat spans: %d retry events, %d with a time to first chunk; want 1 and 4", retries, timed)
	}
	var compactions int
	for _, e := range byName["rein.compact"].Events {
		if e.Name == "rein.compaction" {
			compactions++
		}
	}
	if compactions != 1 {
		t.Errorf("compaction events = %d, want 1", compactions)
	}
}
