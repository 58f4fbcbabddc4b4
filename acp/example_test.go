package acp_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/reinhq/rein/acp"
	"github.com/reinhq/rein/acp/acptest"
	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm/llmtest"
)

// A host serves agents to an editor; here the editor is a scripted client
// on a pipe and the model a scripted one.
func Example() {
	model := llmtest.NewModel(llmtest.Reply("Hello from rein."))
	srv, err := acp.New(&acp.Options{
		NewAgent: func(ctx context.Context, req *acp.AgentRequest) (*acp.Handle, error) {
			a, err := agent.New(&agent.Options{Model: model, Provider: "llmtest", ModelName: "test",
				Session: req.Session, Approver: req.Approver})
			if err != nil {
				return nil, err
			}
			return &acp.Handle{Agent: a}, nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	agentIn, editorOut := io.Pipe()
	editorIn, agentOut := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), agentIn, agentOut) }()

	editor := acptest.NewClient()
	conn := sdk.NewClientSideConnection(editor, editorOut, editorIn)
	conn.SetLogger(slog.New(slog.DiscardHandler))
	ctx := context.Background()
	if _, err := conn.Initialize(ctx, sdk.InitializeRequest{ProtocolVersion: sdk.ProtocolVersionNumber}); err != nil {
		fmt.Println(err)
		return
	}
	dir, _ := os.Getwd()
	sess, err := conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: dir, McpServers: []sdk.McpServer{}})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := conn.Prompt(ctx, sdk.PromptRequest{SessionId: sess.SessionId, Prompt: []sdk.ContentBlock{sdk.TextBlock("hi")}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.StopReason)
	for _, line := range editor.Trace() {
		fmt.Println(line)
	}
	editorOut.Close() // the editor goes away: Serve closes the agents and returns
	fmt.Println(<-served)
	// Output:
	// end_turn
	// agent: Hello from rein.
	// <nil>
}
