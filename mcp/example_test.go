package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/mcp"
)

// An in-process MCP server, reached over an in-memory transport, offers its
// tools to rein under namespaced names.
func Example() {
	srv := sdk.NewServer(&sdk.Implementation{Name: "greeter", Version: "1"}, nil)
	type in struct {
		Name string `json:"name"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "greet", Description: "Greets someone.", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *sdk.CallToolRequest, args in) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "Hello, " + args.Name + "!"}}}, nil, nil
		})

	m, err := mcp.New(&mcp.Options{Servers: []mcp.ServerConfig{{
		Name: "hello",
		NewTransport: func(ctx context.Context) (sdk.Transport, error) {
			client, server := sdk.NewInMemoryTransports()
			if _, err := srv.Connect(ctx, server, nil); err != nil {
				return nil, err
			}
			return client, nil
		},
	}}})
	if err != nil {
		panic(err)
	}
	defer m.Close()

	tools, err := m.Tools(context.Background())
	if err != nil {
		panic(err)
	}
	for _, t := range tools {
		fmt.Println(t.Spec().Name, "read-only:", t.Spec().Annotations.ReadOnly)
	}
	res, err := m.Call(context.Background(), "hello", "greet", json.RawMessage(`{"name":"rein"}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(res.TextOf())
	// Output:
	// mcp_hello_greet read-only: true
	// Hello, rein!
}
