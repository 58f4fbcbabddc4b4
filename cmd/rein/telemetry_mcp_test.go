package main

import (
	"context"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/reinhq/rein/llm/llmtest"
)

// tracedServer is an MCP server over HTTP that notes the traceparent of
// each tools/call: in _meta, and in the request's header.
type tracedServer struct {
	mu           sync.Mutex
	meta, header []string
}

func (s *tracedServer) start(t *testing.T) string {
	srv := sdk.NewServer(&sdk.Implementation{Name: "web", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "echo"}, func(ctx context.Context, req *sdk.CallToolRequest, in struct {
		Message string `json:"message"`
	}) (*sdk.CallToolResult, any, error) {
		tp, _ := req.Params.Meta["traceparent"].(string)
		s.mu.Lock()
		s.meta = append(s.meta, tp)
		s.mu.Unlock()
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Message}}}, nil, nil
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tp := r.Header.Get("Traceparent"); tp != "" {
			s.mu.Lock()
			s.header = append(s.header, tp)
			s.mu.Unlock()
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(web.Close)
	return web.URL
}

// spanParent is the traceparent naming span s.
func spanParent(s *tracepb.Span) string {
	return "00-" + hex.EncodeToString(s.TraceId) + "-" + hex.EncodeToString(s.SpanId) + "-01"
}

// With OTEL_* set, an MCP call is a client span under its execute_tool
// span, the server gets that span's context in _meta and the HTTP
// header, a hook command of the call gets the run's trace as
// TRACEPARENT, and the call's duration is exported as a metric.
func TestRunTraceReachesMCPAndHooks(t *testing.T) {
	needHooks(t)
	rec, endpoint := httpReceiver(t)
	web := &tracedServer{}
	url := web.start(t)
	e := newEnv(t)
	e.writeSettings("PostToolUse", "", e.hookScript("tp.sh", `printf '%s\n' "$TRACEPARENT" >> "$REIN_PROJECT_DIR/tp.txt"`+"\n", 0))
	m := llmtest.NewModel(llmtest.CallTool("c1", "mcp_web_echo", `{"message":"hi"}`), llmtest.Reply("done"))
	srv := llmtest.NewServer(t, m)
	env := append(anthropicWire.env(), "OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint, "TRACEPARENT=00-11111111111111111111111111111111-2222222222222222-01")
	r := e.run(env, anthropicWire.args(srv, e, "--approve", "auto", "--mcp", "web="+url, "echo hi")...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	byName := map[string]*tracepb.Span{}
	for _, s := range rec.spans {
		byName[s.Name] = s
	}
	call, tool, root := byName["tools/call echo"], byName["execute_tool mcp_web_echo"], byName["invoke_agent rein"]
	if call == nil || tool == nil || root == nil {
		t.Fatalf("spans received: %v", byName)
	}
	if string(call.ParentSpanId) != string(tool.SpanId) || call.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("tools/call is not a client span under execute_tool")
	}
	if got := attrValue(call.Attributes, "mcp.method.name"); got != "tools/call" {
		t.Errorf("mcp.method.name = %q", got)
	}
	if d := rec.metrics["mcp.client.operation.duration"]; d.GetUnit() != "s" || len(d.GetHistogram().GetDataPoints()) != 1 ||
		d.GetHistogram().DataPoints[0].Count != 1 || attrValue(d.GetHistogram().DataPoints[0].Attributes, "mcp.method.name") != "tools/call" {
		t.Errorf("mcp.client.operation.duration = %v, want one tools/call in seconds", d)
	}
	web.mu.Lock()
	defer web.mu.Unlock()
	want := spanParent(call)
	if len(web.meta) != 1 || web.meta[0] != want {
		t.Errorf("_meta traceparent = %q, want %s", web.meta, want)
	}
	if len(web.header) == 0 || web.header[len(web.header)-1] != want {
		t.Errorf("traceparent headers = %q, want the last to be %s", web.header, want)
	}
	b, err := os.ReadFile(filepath.Join(e.work, "tp.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.TrimSpace(string(b))
	if got != spanParent(tool) && got != spanParent(root) {
		t.Errorf("the hook's TRACEPARENT = %q, want the call's span %s (or the run's %s)", got, spanParent(tool), spanParent(root))
	}
}
