package mcp_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/reinhq/rein/mcp"
)

func TestReadProjectFile(t *testing.T) {
	got, err := mcp.ReadProjectFile(filepath.Join("testdata", "projectfile", mcp.ProjectFileName))
	if err != nil {
		t.Fatal(err)
	}
	want := []mcp.ServerConfig{
		{Name: "docs", URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${DOCS_TOKEN}"}},
		{Name: "editor", URL: "http://127.0.0.1:3001/mcp"},
		{Name: "fs", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "${ROOT:-.}"}, Env: map[string]string{"LOG_LEVEL": "debug"}},
		{Name: "legacy", URL: "https://example.com/sse", SSE: true},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(mcp.ServerConfig{}, "Filter", "Auth", "NewTransport")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestReadProjectFileErrors(t *testing.T) {
	if got, err := mcp.ReadProjectFile(filepath.Join(t.TempDir(), mcp.ProjectFileName)); err != nil || got != nil {
		t.Errorf("a missing file = %v, %v; want no servers", got, err)
	}
	for name, body := range map[string]string{
		"not json":     `{"mcpServers": [`,
		"unknown type": `{"mcpServers": {"x": {"type": "ws", "url": "https://a"}}}`,
		"url and cmd":  `{"mcpServers": {"x": {"type": "http", "url": "https://a", "command": "b"}}}`,
		"nothing":      `{"mcpServers": {"x": {}}}`,
		"not http(s)":  `{"mcpServers": {"x": {"type": "http", "url": "ftp://a"}}}`,
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), mcp.ProjectFileName)
			if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := mcp.ReadProjectFile(path)
			if !errors.Is(err, mcp.ErrConfig) {
				t.Errorf("ReadProjectFile = %v, want ErrConfig", err)
			}
		})
	}
}
