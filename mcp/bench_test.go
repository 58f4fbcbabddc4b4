//go:build unix

package mcp_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/reinhq/rein/mcp"
	"github.com/reinhq/rein/tool"
)

// BenchmarkBootstrapEverything measures New, Warmup (spawn, handshake,
// tools/list) and Close of the everything server over stdio.
//
//	go test -run '^$' -bench BootstrapEverything -benchtime 5x ./mcp
func BenchmarkBootstrapEverything(b *testing.B) {
	cfg := everything(b)
	for b.Loop() {
		m, err := mcp.New(&mcp.Options{Servers: []mcp.ServerConfig{cfg}})
		if err != nil {
			b.Fatal(err)
		}
		if err := m.Warmup(context.Background()); err != nil {
			b.Fatal(err)
		}
		m.Close()
	}
}

// BenchmarkCall compares one call through tool.Run: a native tool, an MCP
// tool of an in-process server (in-memory transport: the cost of the MCP
// client and rein's adapter), and the everything server over stdio.
//
//	go test -run '^$' -bench 'Call/' -benchtime 2000x ./mcp
func BenchmarkCall(b *testing.B) {
	args := json.RawMessage(`{"message":"hi"}`)
	run := func(b *testing.B, t tool.Tool) {
		b.ReportAllocs()
		ctx := context.Background()
		call := &tool.Call{ID: "c", Name: t.Spec().Name, Args: args}
		for b.Loop() {
			res, err := tool.Run(ctx, t, call)
			if err != nil || res.IsError {
				b.Fatal(err, res.TextOf())
			}
		}
	}
	b.Run("native", func(b *testing.B) {
		t, err := tool.New("echo", "Echoes.", func(ctx context.Context, in echoIn, call *tool.Call) (*tool.Result, error) {
			return tool.Text("Echo: " + in.Message), nil
		}, nil)
		if err != nil {
			b.Fatal(err)
		}
		run(b, t)
	})
	b.Run("mcp-in-memory", func(b *testing.B) {
		t := benchTool(b, mcp.ServerConfig{Name: "s", NewTransport: inProcess(b, newServer(b, ""), nil)}, "mcp_s_echo")
		run(b, t)
	})
	b.Run("mcp-stdio-everything", func(b *testing.B) {
		t := benchTool(b, everything(b), "mcp_everything_echo")
		run(b, t)
	})
}

func benchTool(b *testing.B, cfg mcp.ServerConfig, name string) tool.Tool {
	m, err := mcp.New(&mcp.Options{Servers: []mcp.ServerConfig{cfg}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { m.Close() })
	if err := m.Warmup(context.Background()); err != nil {
		b.Fatal(err)
	}
	t, ok := m.Lookup(name)
	if !ok {
		b.Fatalf("no tool %s", name)
	}
	return t
}
