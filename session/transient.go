package session

import "github.com/reinhq/rein/llm"

// Types of transient events: published to observers (and a Stream's
// consumer) as they happen, with Seq 0, and never written to the log.
const (
	TypeToolProgress       = "tool.progress"
	TypeCompactionProgress = "compaction.progress"
)

// ToolProgress is a progress report from inside a running tool call.
type ToolProgress struct {
	CallID  llm.CallID `json:"call_id"`
	Message string     `json:"message,omitempty"`
	Done    float64    `json:"done,omitempty"` // fraction done, 0 when unknown
}

// CompactionProgress tells how a compaction goes: Phase is start,
// progress (one summarizer chunk done), end (the compaction event is on
// the log) or failed (nothing was written, Error says why).
type CompactionProgress struct {
	Phase        string `json:"phase"`
	Auto         bool   `json:"auto,omitempty"` // the loop started it (threshold or overflow)
	Chunk        int    `json:"chunk,omitempty"`
	Chunks       int    `json:"chunks,omitempty"`
	FromSeq      int64  `json:"from_seq,omitempty"`
	ToSeq        int64  `json:"to_seq,omitempty"`
	TokensBefore int64  `json:"tokens_before,omitempty"`
	TokensAfter  int64  `json:"tokens_after,omitempty"`
	Error        string `json:"error,omitempty"`
}

// EventType returns TypeToolProgress.
func (*ToolProgress) EventType() string { return TypeToolProgress }

// EventType returns TypeCompactionProgress.
func (*CompactionProgress) EventType() string { return TypeCompactionProgress }

func (*ToolProgress) isPayload()       {}
func (*CompactionProgress) isPayload() {}
