package llm

// Chunk is one item of a model's response stream: *BlockStart, *TextDelta,
// *ReasoningDelta, *ToolCallDelta, *BlockEnd, *UsageChunk or *Finish.
//
// The protocol: content arrives in blocks identified by Index. A block may
// open with BlockStart and close with BlockEnd, but an Assembler also
// accepts delta-only streams. Usage comes before Finish; Finish is last.
type Chunk interface{ isChunk() }

// BlockKind is the kind of content a block carries.
type BlockKind string

// Block kinds.
const (
	BlockText      BlockKind = "text"
	BlockReasoning BlockKind = "reasoning"
	BlockToolCall  BlockKind = "tool_call"
)

// BlockStart opens block Index. For a tool call it carries the call's id
// and name when the provider sends them up front.
type BlockStart struct {
	Index int
	Kind  BlockKind
	ID    CallID
	Name  string
}

// TextDelta appends text to block Index.
type TextDelta struct {
	Index int
	Text  string
}

// ReasoningDelta appends thinking to block Index. Signature and Redacted,
// when set, replace the block's signature or opaque redacted data.
type ReasoningDelta struct {
	Index     int
	Text      string
	Signature string
	Redacted  string
}

// ToolCallDelta appends raw argument JSON to the tool call in block Index.
// ID and Name, when set, fill in what BlockStart did not carry.
type ToolCallDelta struct {
	Index int
	ID    CallID
	Name  string
	Args  string
}

// BlockEnd closes block Index; later deltas for it are ignored.
type BlockEnd struct {
	Index int
}

// UsageChunk reports token usage. Several may arrive; later values for a
// counter replace earlier non-zero ones (see Usage.Merge).
type UsageChunk struct {
	Usage Usage
}

// Finish ends the response. Provenance, when set, names the model that
// actually answered and carries the adapter's replay state.
type Finish struct {
	Reason     FinishReason
	Provenance *Provenance
}

func (*BlockStart) isChunk()     {}
func (*TextDelta) isChunk()      {}
func (*ReasoningDelta) isChunk() {}
func (*ToolCallDelta) isChunk()  {}
func (*BlockEnd) isChunk()       {}
func (*UsageChunk) isChunk()     {}
func (*Finish) isChunk()         {}

// FinishReason says why a response ended.
type FinishReason string

// Finish reasons.
const (
	FinishStop      FinishReason = "stop"
	FinishToolCalls FinishReason = "tool-calls"
	FinishMaxTokens FinishReason = "max-tokens"
	FinishAborted   FinishReason = "aborted"
	FinishError     FinishReason = "error"
	// FinishFiltered: the provider withheld content (content filter, refusal).
	FinishFiltered FinishReason = "filtered"
)
