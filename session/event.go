package session

import (
	"encoding/json"
	"time"

	"github.com/reinhq/rein/llm"
)

// ID identifies a session.
type ID string

// TurnID identifies a turn within a session.
type TurnID string

// RunID identifies one call of an agent's Run or Stream.
type RunID string

// Event is one record of a session log: a fixed header plus a typed
// payload. In JSON it is
//
//	{"seq","time","session","turn","run","parent_run","agent","type","data"}
//
// where "type" is Data.EventType(). MarshalJSON and AppendEventJSON write
// an *Unknown payload's data back byte for byte; encoding/json, when it
// encodes a value that holds an Event, compacts it as it does any
// json.RawMessage.
type Event struct {
	Seq       int64     // 1 for the first event; no gaps
	Time      time.Time // when the event was recorded
	Session   ID
	Turn      TurnID
	Run       RunID
	ParentRun RunID  // set on a subagent's events
	Agent     string // the agent's name; empty for the main agent
	Data      Payload
}

// Payload is the typed body of an Event. The set is closed: the types in
// this package, with *Unknown carrying any type a newer rein wrote.
type Payload interface {
	// EventType is the event's "type" in JSON, e.g. "turn.start".
	EventType() string
	isPayload()
}

// Event types.
const (
	TypeTurnStart        = "turn.start"
	TypeTurnEnd          = "turn.end"
	TypeStepStart        = "step.start"
	TypeStepEnd          = "step.end"
	TypeUserMessage      = "user.message"
	TypePromptBlocked    = "prompt.blocked"
	TypeContextMessage   = "context.message"
	TypeSteeringMessage  = "steering.message"
	TypeRequestHeader    = "request.header"
	TypeAssistantChunk   = "assistant.chunk"
	TypeAssistantMessage = "assistant.message"
	TypeToolCall         = "tool.call"
	TypeToolResult       = "tool.result"
	TypeHookDecision     = "hook.decision"
	TypeCompaction       = "compaction"
	TypeTodoWrite        = "todo.write"
	TypeSessionMeta      = "session.meta"
	TypeRepair           = "repair"
	TypeRetry            = "retry"
	TypeFallback         = "fallback"
	TypeCacheDrift       = "cache.drift"
	TypeCacheBreak       = "cache.break"
	TypeMCPEvent         = "mcp.event"
)

// Turn triggers.
const (
	TriggerPrompt   = "prompt"
	TriggerFollowUp = "follow-up"
	TriggerInject   = "inject"
	TriggerResume   = "resume"
)

// EndReason says why a turn ended.
type EndReason string

// Turn end reasons.
const (
	EndCompleted   EndReason = "completed"
	EndAborted     EndReason = "aborted"     // Cause says who cancelled
	EndBlocked     EndReason = "blocked"     // a hook denied the prompt or stopped the turn
	EndError       EndReason = "error"       // Message and Code say what failed
	EndMaxTokens   EndReason = "max-tokens"  // the model hit its output limit
	EndMaxSteps    EndReason = "max-steps"   // the step limit was reached
	EndBudget      EndReason = "budget"      // a cost or token budget was reached
	EndInterrupted EndReason = "interrupted" // closed by Repair after a crash
)

// Message sources.
const (
	SourceUser     = "user"
	SourceHook     = "hook"
	SourceSteer    = "steer"
	SourceFollowUp = "follow-up"
	SourceSystem   = "system"
)

// Tool result outcomes.
const (
	OutcomeExecute      = "execute"
	OutcomeGateBlock    = "gate-block"
	OutcomeSubstitute   = "substitute"
	OutcomeUnknown      = "unknown"
	OutcomeInvalidInput = "invalid-input"
	OutcomeCancelled    = "cancelled"
	OutcomeInterrupted  = "interrupted"
)

// Codes of results that Repair writes for calls left open by a crash.
const (
	CodeOutcomeUnknown = "TOOL_OUTCOME_UNKNOWN"
	CodeNotStarted     = "TOOL_NOT_STARTED"
)

// TurnStart opens a turn.
type TurnStart struct {
	Trigger string `json:"trigger"`
}

// TurnEnd closes a turn.
type TurnEnd struct {
	Reason  EndReason `json:"reason"`
	Cause   string    `json:"cause,omitempty"`   // for aborted: user, parent, hook
	Message string    `json:"message,omitempty"` // for error and others: what happened
	Code    string    `json:"code,omitempty"`
}

// StepStart opens a step: one model request plus the tool calls it asked for.
type StepStart struct {
	Step int `json:"step"` // 1-based within the turn
}

// StepEnd closes a step.
type StepEnd struct {
	Step   int              `json:"step"`
	Usage  llm.Usage        `json:"usage,omitzero"`
	Finish llm.FinishReason `json:"finish,omitempty"`
}

// UserMessage is a prompt.
type UserMessage struct {
	Parts  llm.PartList `json:"parts"`
	Source string       `json:"source,omitempty"`
}

// PromptBlocked records a prompt a hook denied; it never reached the model.
type PromptBlocked struct {
	Reason string `json:"reason"`
	Hook   string `json:"hook,omitempty"`
}

// ContextMessage is context given to the model (an inject, a hook's
// additional context), rendered as context rather than as a prompt.
type ContextMessage struct {
	Parts  llm.PartList `json:"parts"`
	Source string       `json:"source,omitempty"`
}

// SteeringMessage is a message sent while the agent works; the next
// request sees it after the step's tool results.
type SteeringMessage struct {
	Parts  llm.PartList `json:"parts"`
	Source string       `json:"source,omitempty"`
}

// RequestHeader records what, besides the derived history, makes up a
// model request. It is written on a turn's first step and whenever one of
// its fields changes, so every request can be rebuilt from the log.
type RequestHeader struct {
	Provider   string          `json:"provider"`
	Model      string          `json:"model"`
	Sampling   json.RawMessage `json:"sampling,omitempty"` // the request's sampling and reasoning fields
	System     []llm.Text      `json:"system,omitempty"`
	SystemHash string          `json:"system_hash,omitempty"`
	Tools      []string        `json:"tools,omitempty"` // names in the order offered
	ToolsHash  string          `json:"tools_hash,omitempty"`
	Reason     string          `json:"reason"` // initial, change, resume
}

// AssistantChunk carries coalesced stream deltas of the current response,
// for exact replay. Stores may pack a run of them into one record.
type AssistantChunk struct {
	Step   int          `json:"step"`
	Deltas []ChunkDelta `json:"deltas"`
}

// ChunkDelta is one coalesced delta: Kind is text, reasoning or tool_call.
type ChunkDelta struct {
	Index int        `json:"index"`
	Kind  string     `json:"kind"`
	Text  string     `json:"text,omitempty"`
	ID    llm.CallID `json:"id,omitempty"`
	Name  string     `json:"name,omitempty"`
}

// AssistantMessage is the model's response. An interrupted one holds what
// streamed before a cancel, with no tool calls.
type AssistantMessage struct {
	Parts       llm.PartList     `json:"parts"`
	Provenance  *llm.Provenance  `json:"provenance,omitempty"`
	Usage       llm.Usage        `json:"usage,omitzero"`
	Finish      llm.FinishReason `json:"finish,omitempty"`
	Interrupted bool             `json:"interrupted,omitempty"`
}

// ToolCall records that a tool call started executing, with the arguments
// it ran with (after coercion and hook edits). A call in an assistant
// message without a ToolCall event never started.
type ToolCall struct {
	CallID  llm.CallID      `json:"call_id"`
	Name    string          `json:"name"`
	Args    json.RawMessage `json:"args,omitempty"`
	Origin  string          `json:"origin,omitempty"`  // native, mcp, provider
	Coerced []string        `json:"coerced,omitempty"` // paths of coerced fields
}

// ToolResult answers a tool call; every call in an assistant message gets
// exactly one.
type ToolResult struct {
	CallID      llm.CallID    `json:"call_id"`
	Name        string        `json:"name,omitempty"`
	Parts       llm.PartList  `json:"parts"`
	IsError     bool          `json:"is_error,omitempty"`
	Code        string        `json:"code,omitempty"`
	Outcome     string        `json:"outcome,omitempty"`
	Duration    time.Duration `json:"duration,omitempty"`
	Interrupted bool          `json:"interrupted,omitempty"`
}

// HookDecision records a hook's non-continue decision.
type HookDecision struct {
	Point    string          `json:"point"`
	Hook     string          `json:"hook,omitempty"`
	Decision string          `json:"decision"` // edit, deny, substitute, stop, continue, allow, ask
	Reason   string          `json:"reason,omitempty"`
	CallID   llm.CallID      `json:"call_id,omitempty"`
	Detail   json.RawMessage `json:"detail,omitempty"`
}

// Compaction replaces the events with seqs FromSeq..ToSeq (inclusive) in
// the derived history by Summary. The originals stay in the log.
type Compaction struct {
	Summary      string `json:"summary"`
	FromSeq      int64  `json:"from_seq"`
	ToSeq        int64  `json:"to_seq"`
	TokensBefore int64  `json:"tokens_before,omitempty"`
	TokensAfter  int64  `json:"tokens_after,omitempty"`
}

// TodoItem is one entry of the model's plan.
type TodoItem struct {
	ID      string `json:"id,omitempty"`
	Content string `json:"content"`
	Status  string `json:"status"` // pending, in_progress, completed
}

// TodoWrite records the model's plan as it now stands.
type TodoWrite struct {
	Items []TodoItem `json:"items"`
}

// SessionMeta sets a metadata key of the session.
type SessionMeta struct {
	Key   string `json:"key"`
	Value string `json:"value"`
}

// Repair records a change made to keep the log or the request well formed:
// an orphan result dropped, a missing result synthesised, a duplicate id
// renamed (kinds RepairOrphanResult, RepairMissingResult and
// RepairDuplicateID, which Deriver.Repairs and Deriver.DedupeCalls
// report), a tail turn closed after a crash.
type Repair struct {
	Kind   string     `json:"kind"`
	CallID llm.CallID `json:"call_id,omitempty"`
	Detail string     `json:"detail,omitempty"`
}

// Retry records a failed model request that will be sent again.
type Retry struct {
	Attempt int           `json:"attempt"`
	Kind    string        `json:"kind"` // the llm.ErrorKind
	Delay   time.Duration `json:"delay"`
	Error   string        `json:"error"`
}

// Fallback records a switch to the next model target.
type Fallback struct {
	FromProvider string `json:"from_provider"`
	FromModel    string `json:"from_model"`
	ToProvider   string `json:"to_provider"`
	ToModel      string `json:"to_model"`
	Reason       string `json:"reason"`
}

// CacheDrift records, before a request is sent, that it differs from the
// previous request in what keys the provider's prompt cache. Detail holds
// the full report (per-dimension details, changed system sections).
type CacheDrift struct {
	Changed    []string        `json:"changed"`               // model, tools, toolChoice, system, reasoning, messagePrefix
	DivergedAt int             `json:"diverged_at,omitempty"` // first differing message, for messagePrefix
	Detail     json.RawMessage `json:"detail,omitempty"`
}

// CacheBreak records a response that read materially less from the prompt
// cache than the previous request had stored: what it read, the floor it
// fell below, the tokens billed again, and the likely cause (ttl, change,
// eviction).
type CacheBreak struct {
	Cause    string          `json:"cause"`
	Changed  []string        `json:"changed,omitempty"`
	Read     int64           `json:"read"`
	Expected int64           `json:"expected"`
	Rebilled int64           `json:"rebilled"`
	Detail   json.RawMessage `json:"detail,omitempty"`
}

// MCPEvent records a lifecycle event of an MCP server the host connected:
// Kind is "mcp:connect", "mcp:bootstrap:end", "mcp:disconnect",
// "mcp:tools:changed", "mcp:tool:error", …; Detail holds the event's own
// fields (duration, tool count, warnings, error). The calls themselves
// are tool.call and tool.result events with origin mcp.
type MCPEvent struct {
	Kind   string          `json:"kind"`
	Server string          `json:"server"`
	Detail json.RawMessage `json:"detail,omitempty"`
}

// Unknown keeps an event of a type this version does not know, so that it
// survives reading, export and import unchanged.
type Unknown struct {
	Type string
	Raw  json.RawMessage
}

// EventType returns TypeTurnStart.
func (*TurnStart) EventType() string { return TypeTurnStart }

// EventType returns TypeTurnEnd.
func (*TurnEnd) EventType() string { return TypeTurnEnd }

// EventType returns TypeStepStart.
func (*StepStart) EventType() string { return TypeStepStart }

// EventType returns TypeStepEnd.
func (*StepEnd) EventType() string { return TypeStepEnd }

// EventType returns TypeUserMessage.
func (*UserMessage) EventType() string { return TypeUserMessage }

// EventType returns TypePromptBlocked.
func (*PromptBlocked) EventType() string { return TypePromptBlocked }

// EventType returns TypeContextMessage.
func (*ContextMessage) EventType() string { return TypeContextMessage }

// EventType returns TypeSteeringMessage.
func (*SteeringMessage) EventType() string { return TypeSteeringMessage }

// EventType returns TypeRequestHeader.
func (*RequestHeader) EventType() string { return TypeRequestHeader }

// EventType returns TypeAssistantChunk.
func (*AssistantChunk) EventType() string { return TypeAssistantChunk }

// EventType returns TypeAssistantMessage.
func (*AssistantMessage) EventType() string { return TypeAssistantMessage }

// EventType returns TypeToolCall.
func (*ToolCall) EventType() string { return TypeToolCall }

// EventType returns TypeToolResult.
func (*ToolResult) EventType() string { return TypeToolResult }

// EventType returns TypeHookDecision.
func (*HookDecision) EventType() string { return TypeHookDecision }

// EventType returns TypeCompaction.
func (*Compaction) EventType() string { return TypeCompaction }

// EventType returns TypeTodoWrite.
func (*TodoWrite) EventType() string { return TypeTodoWrite }

// EventType returns TypeSessionMeta.
func (*SessionMeta) EventType() string { return TypeSessionMeta }

// EventType returns TypeRepair.
func (*Repair) EventType() string { return TypeRepair }

// EventType returns TypeRetry.
func (*Retry) EventType() string { return TypeRetry }

// EventType returns TypeFallback.
func (*Fallback) EventType() string { return TypeFallback }

// EventType returns TypeCacheDrift.
func (*CacheDrift) EventType() string { return TypeCacheDrift }

// EventType returns TypeCacheBreak.
func (*CacheBreak) EventType() string { return TypeCacheBreak }

// EventType returns TypeMCPEvent.
func (*MCPEvent) EventType() string { return TypeMCPEvent }

// EventType returns the type the event was written with.
func (u *Unknown) EventType() string { return u.Type }

func (*MCPEvent) isPayload()         {}
func (*CacheDrift) isPayload()       {}
func (*CacheBreak) isPayload()       {}
func (*TurnStart) isPayload()        {}
func (*TurnEnd) isPayload()          {}
func (*StepStart) isPayload()        {}
func (*StepEnd) isPayload()          {}
func (*UserMessage) isPayload()      {}
func (*PromptBlocked) isPayload()    {}
func (*ContextMessage) isPayload()   {}
func (*SteeringMessage) isPayload()  {}
func (*RequestHeader) isPayload()    {}
func (*AssistantChunk) isPayload()   {}
func (*AssistantMessage) isPayload() {}
func (*ToolCall) isPayload()         {}
func (*ToolResult) isPayload()       {}
func (*HookDecision) isPayload()     {}
func (*Compaction) isPayload()       {}
func (*TodoWrite) isPayload()        {}
func (*SessionMeta) isPayload()      {}
func (*Repair) isPayload()           {}
func (*Retry) isPayload()            {}
func (*Fallback) isPayload()         {}
func (*Unknown) isPayload()          {}
