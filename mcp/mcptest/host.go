package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// NewHostServer is an MCP server whose tools ask the host, the way
// protocol 2026-07-28 has servers ask (the call's result carries the
// request; the client calls again with the answer):
//
//	form       elicits a name (string, required) and an age (integer)
//	url        elicits the opening of https://example.com/signin
//	summarise  asks for a completion of "Summarise the logs."
//	roots      lists the host's roots
//
// They are marked read-only. Each answers with what it got: "ACTION CONTENT-JSON", "MODEL said
// TEXT", or the root URIs. rootsChanged, when not nil, receives a value
// on every notifications/roots/list_changed.
func NewHostServer(rootsChanged chan<- struct{}) *sdk.Server {
	opts := &sdk.ServerOptions{}
	if rootsChanged != nil {
		opts.RootsListChangedHandler = func(context.Context, *sdk.RootsListChangedRequest) { rootsChanged <- struct{}{} }
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "host", Version: "1"}, opts)
	add := func(name string, p sdk.InputRequest, answer func(sdk.InputResponse) string) {
		sdk.AddTool(srv, &sdk.Tool{Name: name, Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
			got, ok := req.Params.InputResponses["q"]
			if !ok {
				return &sdk.CallToolResult{InputRequests: sdk.InputRequestMap{"q": p}}, nil, nil
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: answer(got)}}}, nil, nil
		})
	}
	elicited := func(r sdk.InputResponse) string {
		res, ok := r.(*sdk.ElicitResult)
		if !ok {
			return fmt.Sprintf("unexpected answer %#v", r)
		}
		b, _ := json.Marshal(res.Content)
		return res.Action + " " + string(b)
	}
	schema := map[string]any{
		"type": "object",
		"properties": map[string]any{
			"name": map[string]any{"type": "string", "title": "Your name"},
			"age":  map[string]any{"type": "integer", "minimum": 0},
		},
		"required": []string{"name"},
	}
	add("form", &sdk.ElicitParams{Mode: "form", Message: "Who are you?", RequestedSchema: schema}, elicited)
	add("url", &sdk.ElicitParams{Mode: "url", Message: "Sign in", URL: "https://example.com/signin", ElicitationID: "e1"}, elicited)
	add("summarise", &sdk.CreateMessageParams{SystemPrompt: "Be brief.", MaxTokens: 100000, Messages: []*sdk.SamplingMessage{
		{Role: "user", Content: &sdk.TextContent{Text: "Summarise the logs."}},
	}}, func(r sdk.InputResponse) string {
		res, ok := r.(*sdk.CreateMessageWithToolsResult)
		if !ok || len(res.Content) != 1 {
			return fmt.Sprintf("unexpected answer %#v", r)
		}
		text, _ := res.Content[0].(*sdk.TextContent)
		return fmt.Sprintf("%s said %q", res.Model, text.Text)
	})
	add("roots", &sdk.ListRootsParams{}, func(r sdk.InputResponse) string {
		res, ok := r.(*sdk.ListRootsResult)
		if !ok {
			return fmt.Sprintf("unexpected answer %#v", r)
		}
		var uris []string
		for _, root := range res.Roots {
			uris = append(uris, root.URI)
		}
		return strings.Join(uris, " ")
	})
	return srv
}

// ServeHTTP serves srv over streamable HTTP on loopback until t ends and
// returns its URL.
func ServeHTTP(t testing.TB, srv *sdk.Server) string {
	t.Helper()
	h := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(h.Close)
	return h.URL
}
