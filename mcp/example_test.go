package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/mcp"
	"github.com/reinhq/rein/mcp/mcptest"
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

// A host answers a server's request for input: the answer is checked
// against the server's form, and "41" becomes the integer it asks for.
func Example_elicitation() {
	srv := mcptest.NewHostServer(nil)
	m, err := mcp.New(&mcp.Options{
		Servers: []mcp.ServerConfig{{
			Name: "host",
			NewTransport: func(ctx context.Context) (sdk.Transport, error) {
				client, server := sdk.NewInMemoryTransports()
				if _, err := srv.Connect(ctx, server, nil); err != nil {
					return nil, err
				}
				return client, nil
			},
		}},
		Elicit: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			fmt.Println(req.Server, "asks:", req.Message)
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": "Ada", "age": "41"}}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	defer m.Close()
	res, err := m.Call(context.Background(), "host", "form", nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("the server got:", res.TextOf())
	// Output:
	// host asks: Who are you?
	// the server got: accept {"age":41,"name":"Ada"}
}
