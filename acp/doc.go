// Package acp serves rein agents to code editors over the Agent Client
// Protocol: JSON-RPC over stdio, the editor as client, rein as the agent
// subprocess. It is a thin host over package agent and the session log,
// built on the protocol's Go SDK (github.com/coder/acp-go-sdk).
//
// A Server answers initialize, session/new, session/load, session/prompt,
// session/cancel and session/close. The host builds the agent of each
// session (model, tools, store, limits) through Options.NewAgent; the
// Server maps what the agent logs onto session/update notifications:
//
//   - assistant text and reasoning deltas → agent_message_chunk and
//     agent_thought_chunk, as they stream;
//   - a tool call → tool_call (kind, title, locations, raw input), then
//     tool_call_update in_progress when it runs and completed or failed
//     with its result; a file a tool changed gets a diff of the whole file;
//   - todo.write → plan;
//   - turn.end → the prompt's stop reason: completed → end_turn,
//     max-tokens → max_tokens, max-steps and budget → max_turn_requests,
//     blocked (a hook denied the prompt) or a filtered response →
//     refusal, aborted → cancelled; a turn that failed is a JSON-RPC
//     error whose message says why.
//
// session/load replays a stored session's log as the same updates, with
// the user's prompts as user_message_chunk.
//
// Approvals go to the editor: the Approver a Server hands to NewAgent
// sends session/request_permission with "allow once", "allow always"
// (remembered by rein's policy as a session rule for the tool) and
// "reject"; a hook's ask reaches it the same way when the agent's
// approval policy defers to it.
//
// With Options.Models the editor can switch a session's model between
// prompts (the "model" session config option): the agent is built again
// on the same session.
//
// Where the editor offers files and terminals, AgentRequest.ClientTools
// gives it its part: shell commands in an editor terminal (background ones
// too, reached by the task tools), reads that also show an unsaved buffer,
// writes and edits made through the editor (fs.WithFiles). The checks stay
// with rein's tools.
//
// Quick start, in a host:
//
//	srv, err := acp.New(&acp.Options{
//		NewAgent: func(ctx context.Context, req *acp.AgentRequest) (*acp.Handle, error) {
//			a, err := agent.New(&agent.Options{Model: model, Store: store,
//				Session: req.Session, Approver: req.Approver, ...})
//			if err != nil {
//				return nil, err
//			}
//			return &acp.Handle{Agent: a}, nil
//		},
//	})
//	if err != nil { … }
//	err = srv.Serve(ctx, os.Stdin, os.Stdout) // until the editor disconnects
//
// Only protocol messages are written to the writer Serve is given;
// diagnostics go to Options.Logger. A line that is not JSON, or not a
// JSON-RPC message, is answered with a JSON-RPC error and the connection
// goes on.
package acp
