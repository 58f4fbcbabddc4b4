package command

import (
	"bytes"
	"encoding/json"
	"strings"
)

// input is the JSON a command reads on stdin. Fields not used by an event
// are left out.
type input struct {
	SessionID      string          `json:"session_id"`
	TranscriptPath string          `json:"transcript_path"`
	Cwd            string          `json:"cwd"`
	PermissionMode string          `json:"permission_mode,omitempty"`
	HookEventName  string          `json:"hook_event_name"`
	Turn           string          `json:"turn,omitempty"`
	Agent          string          `json:"agent,omitempty"`
	ToolName       string          `json:"tool_name,omitempty"`
	ToolInput      json.RawMessage `json:"tool_input,omitempty"`
	ToolUseID      string          `json:"tool_use_id,omitempty"`
	ToolResponse   json.RawMessage `json:"tool_response,omitempty"`
	Error          string          `json:"error,omitempty"`
	Prompt         *string         `json:"prompt,omitempty"`
	StopHookActive *bool           `json:"stop_hook_active,omitempty"`
	LastMessage    *string         `json:"last_assistant_message,omitempty"`
	Source         string          `json:"source,omitempty"`  // SessionStart: startup, resume, clear, compact
	Reason         string          `json:"reason,omitempty"`  // SessionEnd
	Trigger        string          `json:"trigger,omitempty"` // PreCompact: manual, auto
	Instructions   *string         `json:"custom_instructions,omitempty"`
}

// wire is the JSON a command may print on stdout.
type wire struct {
	Continue           *bool           `json:"continue"`
	StopReason         string          `json:"stopReason"`
	SuppressOutput     bool            `json:"suppressOutput"`
	SystemMessage      string          `json:"systemMessage"`
	Decision           string          `json:"decision"`
	Reason             string          `json:"reason"`
	HookSpecificOutput *specificOutput `json:"hookSpecificOutput"`
}

type specificOutput struct {
	HookEventName            string          `json:"hookEventName"`
	PermissionDecision       string          `json:"permissionDecision"`
	PermissionDecisionReason string          `json:"permissionDecisionReason"`
	UpdatedInput             json.RawMessage `json:"updatedInput"`
	AdditionalContext        string          `json:"additionalContext"`
}

// Answer kinds, from the most to the least decisive.
const (
	kindContinue = iota
	kindAllow
	kindAsk
	kindBlock
)

// answer is one command's decision, read from its exit code and output.
type answer struct {
	kind       int    // continue, allow, ask, block
	reason     string // why (block: what the model or user sees)
	stop       bool   // continue:false — end the turn
	stopReason string
	update     json.RawMessage // updatedInput
	context    []string        // additionalContext, or plain stdout where it counts as context
	system     string          // systemMessage: shown to the user
	warning    string          // a non-blocking error: recorded and shown, the run goes on
}

// plainContext reports whether an event's plain stdout (exit 0, not JSON)
// is context for the model.
func plainContext(event string) bool { return event == UserPromptSubmit || event == SessionStart }

// decode reads one finished command's answer. It never fails: output it
// cannot use becomes a non-blocking warning.
func decode(event string, o *outcome) answer {
	var a answer
	switch o.exit {
	case 0:
	case 2:
		a.kind = kindBlock
		a.reason = strings.TrimSpace(o.stderr)
		if a.reason == "" {
			a.reason = "blocked by hook (exit 2, no message on stderr)"
		}
		return a
	default:
		msg := strings.TrimSpace(o.stderr)
		if msg == "" {
			msg = "no message on stderr"
		}
		a.warning = "hook exited " + itoa(o.exit) + ": " + msg
		return a
	}
	out := bytes.TrimSpace([]byte(o.stdout))
	if len(out) == 0 {
		return a
	}
	if out[0] != '{' {
		if plainContext(event) {
			a.context = append(a.context, string(out))
		}
		return a
	}
	var w wire
	if err := json.Unmarshal(out, &w); err != nil {
		a.warning = "hook printed invalid JSON (" + err.Error() + "); its output was ignored"
		return a
	}
	a.system = w.SystemMessage
	if w.Continue != nil && !*w.Continue {
		a.stop = true
		a.stopReason = w.StopReason
		if a.stopReason == "" {
			a.stopReason = "stopped by hook"
		}
	}
	switch strings.ToLower(w.Decision) {
	case "block":
		a.kind = kindBlock
		a.reason = w.Reason
	case "approve":
		a.kind = kindAllow
		a.reason = w.Reason
	}
	if h := w.HookSpecificOutput; h != nil {
		switch strings.ToLower(h.PermissionDecision) {
		case "deny":
			a.kind = max(a.kind, kindBlock)
			a.reason = firstNonEmpty(h.PermissionDecisionReason, a.reason)
		case "ask":
			a.kind = max(a.kind, kindAsk)
			a.reason = firstNonEmpty(h.PermissionDecisionReason, a.reason)
		case "allow":
			a.kind = max(a.kind, kindAllow)
			a.reason = firstNonEmpty(h.PermissionDecisionReason, a.reason)
		case "":
		default:
			a.warning = "hook answered unknown permissionDecision " + quote(h.PermissionDecision) + "; use allow, deny or ask"
		}
		if len(h.UpdatedInput) > 0 && !bytes.Equal(bytes.TrimSpace(h.UpdatedInput), []byte("null")) {
			a.update = h.UpdatedInput
		}
		if h.AdditionalContext != "" {
			a.context = append(a.context, h.AdditionalContext)
		}
	}
	if a.kind == kindBlock && a.reason == "" {
		a.reason = "blocked by hook"
	}
	return a
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
