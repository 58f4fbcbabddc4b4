// Package command runs hook programs at rein's hook points, configured in
// the settings format teams already keep for Claude Code.
//
// A hook program gets the event as JSON on stdin — session_id,
// transcript_path, cwd, hook_event_name, and per event tool_name,
// tool_input, tool_response, prompt, stop_hook_active, source or trigger —
// and answers with its exit code and stdout:
//
//   - exit 0 and no JSON: continue; the plain stdout of UserPromptSubmit and
//     SessionStart hooks is added as context;
//   - exit 2: block; stderr is the reason the model (or, for a prompt, the
//     user) sees;
//   - any other exit code: a non-blocking error, reported, the run goes on;
//   - JSON on stdout: "decision": "block" with "reason"; "continue": false
//     with "stopReason" ends the turn; "systemMessage" is shown to the user;
//     "hookSpecificOutput" carries "permissionDecision" (allow, deny, ask)
//     with "permissionDecisionReason", "updatedInput" (merged over the tool
//     input and validated again against the tool's schema) and
//     "additionalContext" (recorded as a context message).
//
// A command that runs past its timeout (60 s unless the entry says
// otherwise) is killed with its process group and the boundary fails
// closed. Commands get rein's environment without variables that look like
// credentials (API keys, tokens, passwords) unless Options.PassEnv names
// them, plus REIN_PROJECT_DIR and CLAUDE_PROJECT_DIR (CLAUDE_PLUGIN_ROOT
// for a plugin's hooks/hooks.json, CLAUDE_ENV_FILE for SessionStart with
// Options.EnvDir); values of withheld variables are cut from what a hook
// prints. transcript_path names a transcript in the JSON-lines format
// those programs parse, kept by Options.Transcripts.
//
// Events map onto hook points: PreToolUse at pre-tool-use (deny, edit, and
// allow/ask through the approval point; an ask reaches the agent's
// approver as a tool.ApprovalRequest with HookAsked set, which a
// tool.Policy puts to its approver whatever its default), PostToolUse and
// PostToolUseFailure at tool-result (context, feedback, stop),
// UserPromptSubmit at prompt submit (deny, context), Stop at finalize (a
// block continues the turn with the reason as a nudge, and the next run of
// the hook is told stop_hook_active). SessionStart, SessionEnd and
// PreCompact are fired by the host with Runner.Fire. All commands matching
// one event run in parallel; a deny wins over ask over allow, and edits
// apply in configuration order. Matchers select tools by name: exact,
// A|B, a regular expression, or * and empty for all. Whatever settings
// file an entry comes from, commands are told tools in the hook format's
// vocabulary, through the one table Vocabulary used both ways: shell is
// Bash (its timeout in milliseconds), read/write/edit/multi_edit are
// Read/Write/Edit/MultiEdit (file_path beside path), todo is TodoWrite
// (todos for items; each todo told gets an activeForm, its content, as
// the format requires; a returned todo's activeForm and priority, which
// rein's list has no place for, are dropped), ls, glob and grep are LS,
// Glob and Grep, and MCP tools (mcp_SERVER_TOOL) are mcp__SERVER__TOOL.
// A matcher may name either spelling, and an updatedInput may use
// either. tool_response is {stdout, stderr, interrupted} for Bash,
// {filePath, …} for the file tools, {output} otherwise; permission_mode
// comes from Options.PermissionMode.
//
// Quick start:
//
//	entries, err := command.Load(&command.LoadOptions{Dir: root, Claude: true})
//	if err != nil { … }
//	hooks, err := command.New(entries, &command.Options{Dir: root})
//	if err != nil { … }
//	a, err := agent.New(&agent.Options{
//		Model: m, Tools: tools,
//		Hooks:   hooks.Hooks(),
//		Notices: hooks.Notices, // context from hooks reaches the next request
//	})
package command
