package acp

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/mcp"
	"github.com/reinhq/rein/session"
)

func TestStopReason(t *testing.T) {
	tests := []struct {
		name    string
		end     *session.TurnEnd
		finish  llm.FinishReason
		runErr  error
		want    sdk.StopReason
		wantErr string
	}{
		{"completed", &session.TurnEnd{Reason: session.EndCompleted}, llm.FinishStop, nil, sdk.StopReasonEndTurn, ""},
		{"filtered answer", &session.TurnEnd{Reason: session.EndCompleted}, llm.FinishFiltered, nil, sdk.StopReasonRefusal, ""},
		{"max tokens", &session.TurnEnd{Reason: session.EndMaxTokens}, llm.FinishMaxTokens, nil, sdk.StopReasonMaxTokens, ""},
		{"max steps", &session.TurnEnd{Reason: session.EndMaxSteps}, "", nil, sdk.StopReasonMaxTurnRequests, ""},
		{"budget", &session.TurnEnd{Reason: session.EndBudget}, "", nil, sdk.StopReasonMaxTurnRequests, ""},
		{"blocked prompt", &session.TurnEnd{Reason: session.EndBlocked, Message: "no"}, "", nil, sdk.StopReasonRefusal, ""},
		{"cancelled", &session.TurnEnd{Reason: session.EndAborted, Cause: "user"}, "", nil, sdk.StopReasonCancelled, ""},
		{"provider error", &session.TurnEnd{Reason: session.EndError, Message: "overloaded after 4 retries"}, "", errors.New("x"), "", "the turn ended in error: overloaded after 4 retries"},
		{"busy", nil, "", agent.ErrBusy, "", "already running in this session"},
		{"no end", nil, "", nil, "", "without a record of why"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := stopReason(tt.end, tt.finish, tt.runErr)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("stopReason = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestPromptParts(t *testing.T) {
	mime := "image/png"
	blocks := []sdk.ContentBlock{
		sdk.TextBlock("fix it"),
		sdk.TextBlock("   "), // dropped
		sdk.ResourceLinkBlock("main.go", "file:///w/main.go"),
		sdk.ResourceBlock(sdk.EmbeddedResourceResource{TextResourceContents: &sdk.TextResourceContents{Uri: "file:///w/a.txt", Text: "alpha"}}),
		sdk.ResourceBlock(sdk.EmbeddedResourceResource{BlobResourceContents: &sdk.BlobResourceContents{Uri: "file:///w/p.png", Blob: "iVBO", MimeType: &mime}}),
		sdk.ImageBlock("AQID", "image/jpeg"),
	}
	got, err := promptParts(blocks)
	if err != nil {
		t.Fatal(err)
	}
	want := []llm.Part{
		&llm.Text{Text: "fix it"},
		&llm.Text{Text: `<resource_link name="main.go" uri="file:///w/main.go"/>`},
		&llm.Text{Text: "<resource uri=\"file:///w/a.txt\">\nalpha\n</resource>"},
		&llm.Image{MediaType: "image/png", Data: []byte{0x89, 0x50, 0x4e}},
		&llm.Image{MediaType: "image/jpeg", Data: []byte{1, 2, 3}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parts (-want +got):\n%s", diff)
	}
	for _, bad := range [][]sdk.ContentBlock{nil, {sdk.TextBlock(" ")}, {sdk.ImageBlock("%%%", "image/png")}, {sdk.AudioBlock("AA", "audio/wav")}} {
		if _, err := promptParts(bad); err == nil {
			t.Errorf("promptParts(%v) accepted a prompt it cannot send", bad)
		}
	}
}

func TestMCPConfigsAreLiteral(t *testing.T) {
	got, err := mcpConfigs([]sdk.McpServer{
		{Stdio: &sdk.McpServerStdio{Name: "fs", Command: "srv", Args: []string{"--key=${ANTHROPIC_API_KEY}"}, Env: []sdk.EnvVariable{{Name: "TOKEN", Value: "a$b"}}}},
		{Http: &sdk.McpServerHttpInline{Name: "docs", Url: "https://example.com/mcp", Headers: []sdk.HttpHeader{{Name: "Authorization", Value: "Bearer ${SECRET}"}}}},
		{Sse: &sdk.McpServerSseInline{Name: "old", Url: "https://example.com/sse"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []mcp.ServerConfig{
		{Name: "fs", Command: "srv", Args: []string{"--key=$${ANTHROPIC_API_KEY}"}, Env: map[string]string{"TOKEN": "a$$b"}},
		{Name: "docs", URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer $${SECRET}"}},
		{Name: "old", URL: "https://example.com/sse", SSE: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("configs (-want +got):\n%s", diff)
	}
	// Expanded, the editor's values come back as they were sent.
	v, err := mcp.Expand(got[0].Args[0], func(string) (string, bool) { return "leaked", true })
	if err != nil || v != "--key=${ANTHROPIC_API_KEY}" {
		t.Errorf("expanded arg = %q, %v; want the literal text", v, err)
	}
}

func TestCheckMessage(t *testing.T) {
	tests := []struct {
		line string
		code int // 0: a message
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, 0},
		{`{"jsonrpc":"2.0","method":"session/cancel","params":{}}`, 0},
		{`{"jsonrpc":"2.0","id":3,"result":{}}`, 0},
		{`{"jsonrpc":"2.0","id":3,"error":{"code":1,"message":"x"}}`, 0},
		{`not json`, -32700},
		{`{"jsonrpc":"2.0","id":1,"method":`, -32700},
		{`"a string"`, -32600},
		{`{"id":1,"method":"initialize"}`, -32600},
		{`{"jsonrpc":"2.0","id":1,"method":""}`, -32600},
		{`{"jsonrpc":"2.0"}`, -32600},
		{`{"jsonrpc":"2.0","id":4}`, -32600},
	}
	for _, tt := range tests {
		r, _ := checkMessage([]byte(tt.line))
		got := 0
		if r != nil {
			got = r.Error.Code
			if _, err := json.Marshal(r); err != nil {
				t.Errorf("%s: reply does not encode: %v", tt.line, err)
			}
		}
		if got != tt.code {
			t.Errorf("checkMessage(%s) = %d, want %d", tt.line, got, tt.code)
		}
	}
}

func TestDescribe(t *testing.T) {
	tests := []struct {
		name, args string
		want       description
	}{
		{"read", `{"path":"src/a.go","offset":10}`, description{kind: sdk.ToolKindRead, title: "Read src/a.go", path: "/w/src/a.go", line: 10}},
		{"edit", `{"path":"/w/b.go"}`, description{kind: sdk.ToolKindEdit, title: "Edit /w/b.go", path: "/w/b.go"}},
		{"grep", `{"pattern":"func main"}`, description{kind: sdk.ToolKindSearch, title: "Search for `func main`"}},
		{"shell", `{"command":"go test ./..."}`, description{kind: sdk.ToolKindExecute, title: "Run `go test ./...`"}},
		{"shell", `not json`, description{kind: sdk.ToolKindExecute, title: "Run a command"}},
		{"mcp_docs_search", `{"q":"x"}`, description{kind: sdk.ToolKindOther, title: "mcp_docs_search"}},
	}
	for _, tt := range tests {
		got := describe(tt.name, json.RawMessage(tt.args), "/w")
		if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(description{})); diff != "" {
			t.Errorf("describe(%s, %s) (-want +got):\n%s", tt.name, tt.args, diff)
		}
	}
}
