// Package mcp makes Model Context Protocol servers' tools first-class rein
// tools, using the official go-sdk as the client.
//
// A Manager holds the servers: stdio subprocesses (a command), remote
// servers over streamable HTTP or the legacy HTTP+SSE transport, or any
// go-sdk transport (such as an in-memory one to an in-process server).
// Each server's tools become *Tool values named mcp_<server>_<tool>
// (sanitised to letters, digits, '_' and '-', at most 64 bytes, never
// colliding), with the server's annotations mapped to rein's, so they go
// through the loop's gate, validation, approval, dry-run and logging like
// native tools; hosts record them with origin "mcp" (Tool.Origin).
//
// Quick start:
//
//	m, err := mcp.New(&mcp.Options{Servers: []mcp.ServerConfig{
//		{Name: "fs", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-filesystem", "."}},
//		{Name: "docs", URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ${DOCS_TOKEN}"}},
//	}})
//	if err != nil { … }
//	defer m.Close() // stops every server process
//	tools, err := m.Tools(ctx) // connects in parallel; a *BootstrapError names servers that failed
//	a, err := agent.New(&agent.Options{
//		Model: model, Tools: tools, Hooks: m.Hooks(),
//		System: system + "\n\n" + m.Instructions(),
//	})
//
// Lifecycle: servers connect in parallel on Warmup or the first Tools call
// (or in the background with Options.Eager); a server that fails is
// reported and does not stop the others. A lazy server with a cached tool
// list connects on its first call. A dropped connection is retired at once
// (the call in flight fails with an error result, the run goes on) and
// reconnected in the background with backoff. tools/list_changed lists the
// tools again and replaces Set. Close closes every connection and kills
// what is left of each stdio server's process group; on Linux a server also
// dies with rein.
//
// Configuration values may hold ${VAR} templates, resolved when a
// connection opens and never stored resolved. Enabled, Disabled and Filter
// choose tools; HostOnly servers serve host code (Manager.Call) and are
// never offered to the model. An Auth callback computes a session's
// headers for every turn (through the prompt hook of Manager.Hooks); its
// failure fails the turn before the model is asked anything.
//
// Hosts offer servers what they have: Options.Elicit answers requests for
// input (forms, checked against the requested schema, and URLs to open);
// Options.Sampling lets servers ask the host's model for completions,
// each approved first and priced; Options.Roots (and SetRoots, which
// notifies servers) name the directories servers may work in. Without
// them rein tells servers it offers none of these.
//
// OAuth (ServerConfig.OAuth) uses the go-sdk's handlers: the
// authorization-code grant with PKCE, dynamic registration, client ID
// metadata documents or pre-registered clients, refresh, and scope
// step-up; or the client-credentials grant. Tokens are kept per server
// under Options.StateDir, bound to the URL they were issued for.
// ReadProjectFile reads the .mcp.json project files other clients share.
//
// Events (Options.Events) report connections, bootstrap results with
// duration, tool count and warnings, tool calls before and after, errors,
// tool list changes, elicitations, completions, drops and closes.
package mcp
