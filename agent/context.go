package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// System section kinds, for Options.SystemSections and ContextBreakdown.
const (
	SectionHost   = "host"   // the host's own instructions (Options.System)
	SectionRules  = "rules"  // rules files such as AGENTS.md
	SectionSkills = "skills" // the skills catalog
	SectionTools  = "tools"  // a tool catalog written into the system prompt
	SectionOther  = "other"
)

// SystemSection is one labelled part of the system prompt, sent after
// Options.System as its own section, so the context breakdown and the
// prompt-cache telemetry can tell the parts apart.
type SystemSection struct {
	// Kind is SectionRules, SectionSkills, SectionTools, SectionHost or
	// any label of the host's; empty means SectionOther.
	Kind string
	// Name tells sections of one kind apart, e.g. a rules file's path.
	Name string
	// Text is the section's content.
	Text string
}

// systemPrompt is the system prompt as sent: the host's instructions,
// then the sections, each labelled for the breakdown and the cache
// telemetry.
type systemPrompt struct {
	parts    []llm.Text
	sections []SystemSection // the kind and name of each part
	hash     string
	tokens   int64
}

func newSystemPrompt(system string, sections []SystemSection) systemPrompt {
	var p systemPrompt
	if system != "" {
		p.parts = append(p.parts, llm.Text{Text: system})
		p.sections = append(p.sections, SystemSection{Kind: SectionHost, Name: "system"})
	}
	for _, s := range sections {
		if s.Text == "" {
			continue
		}
		p.parts = append(p.parts, llm.Text{Text: s.Text})
		p.sections = append(p.sections, SystemSection{Kind: cmpOr(s.Kind, SectionOther), Name: s.Name})
	}
	p.hash = systemHash(p.parts)
	for _, t := range p.parts {
		p.tokens += estimateText(t.Text)
	}
	return p
}

// systemHash names a system prompt on request headers.
func systemHash(parts []llm.Text) string {
	if len(parts) == 0 {
		return ""
	}
	h := sha256.New()
	if len(parts) == 1 {
		h.Write([]byte(parts[0].Text)) // as before sections existed
	} else {
		for _, s := range parts {
			h.Write([]byte(s.Text))
			h.Write([]byte{0})
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// names labels the sections for the cache watcher.
func (p *systemPrompt) names() []string {
	names := make([]string, len(p.sections))
	for i, s := range p.sections {
		names[i] = s.Kind
		if s.Name != "" {
			names[i] += ":" + s.Name
		}
	}
	return names
}

// ContextItem is one measured part of a request.
type ContextItem struct {
	Kind   string // a section kind, "tool", or "conversation"
	Name   string // the section's or tool's name
	Tokens int64  // estimated tokens
}

// ContextBreakdown says what the next request holds and how much room is
// left. Component figures are estimates (about four bytes a token); Total
// is exact when Exact is set (the model implements llm.TokenCounter).
type ContextBreakdown struct {
	// Model is the model the figures are for.
	Model string
	// Window is the model's context window in tokens, and OutputReserve
	// the tokens kept for the response; both zero when unknown (set
	// Options.ContextWindow).
	Window        int64
	OutputReserve int64

	// System lists the system prompt's sections; SystemTokens sums them.
	System       []ContextItem
	SystemTokens int64
	// Tools lists the tool definitions; ToolTokens sums them.
	Tools      []ContextItem
	ToolTokens int64
	// Messages is the conversation's message count and
	// ConversationTokens their estimated size.
	Messages           int
	ConversationTokens int64

	// Total is the whole request's size; Exact reports it was counted by
	// the model rather than estimated.
	Total int64
	Exact bool
	// Free is Window - OutputReserve - Total (negative when over), zero
	// when the window is unknown.
	Free int64
	// CompactAt is the size at which automatic compaction starts; zero
	// when it is off.
	CompactAt int64
}

// String renders the breakdown as a short table for people.
func (b *ContextBreakdown) String() string {
	s := fmt.Sprintf("model %s: %d tokens", b.Model, b.Total)
	if b.Exact {
		s += " (counted)"
	} else {
		s += " (estimated)"
	}
	if b.Window > 0 {
		s += fmt.Sprintf(" of %d usable (window %d, output reserve %d), %d free", b.Window-b.OutputReserve, b.Window, b.OutputReserve, b.Free)
	}
	s += "\n"
	for _, it := range b.System {
		s += fmt.Sprintf("  system %-8s %-24s %8d\n", it.Kind, it.Name, it.Tokens)
	}
	s += fmt.Sprintf("  tools    %-33d %8d\n", len(b.Tools), b.ToolTokens)
	s += fmt.Sprintf("  messages %-33d %8d\n", b.Messages, b.ConversationTokens)
	return s
}

// Context returns the breakdown of the request the agent would send next:
// system sections, tool definitions, conversation and the free space left
// in the model's window. It works before the first run. When the model
// implements llm.TokenCounter, Total is counted by it (a failed count
// falls back to the estimate and is returned with the breakdown as an
// error only when ctx is done).
func (a *Agent) Context(ctx context.Context) (*ContextBreakdown, error) {
	t := a.targets[a.target.Load()]
	b := &ContextBreakdown{Model: t.Model, Window: a.window, OutputReserve: a.reserve}
	for i, s := range a.sys.parts {
		it := ContextItem{Kind: a.sys.sections[i].Kind, Name: a.sys.sections[i].Name, Tokens: estimateText(s.Text)}
		b.System = append(b.System, it)
		b.SystemTokens += it.Tokens
	}
	tb := a.tb.Load()
	for _, sp := range tb.specs {
		it := ContextItem{Kind: "tool", Name: sp.Name, Tokens: estimateTool(sp)}
		b.Tools = append(b.Tools, it)
		b.ToolTokens += it.Tokens
	}
	msgs, conv := a.w.history()
	b.ConversationTokens = conv
	b.Messages = len(msgs)
	b.Total = b.SystemTokens + b.ToolTokens + b.ConversationTokens
	if tc, ok := t.Client.(llm.TokenCounter); ok {
		req := a.template
		req.Model, req.System, req.Tools, req.Messages = t.Model, a.sys.parts, tb.specs, msgs
		n, err := tc.CountTokens(ctx, &req)
		switch {
		case err == nil:
			b.Total, b.Exact = n, true
		case ctx.Err() != nil:
			return nil, err
		default:
			a.log.Debug("token count failed; the breakdown is estimated", "session", a.Session(), "err", err)
		}
	}
	if b.Window > 0 {
		b.Free = b.Window - b.OutputReserve - b.Total
		b.CompactAt = a.compactAt()
	}
	return b, nil
}

// fixedTokens is the estimated size of the system prompt and tools.
func (a *Agent) fixedTokens() int64 { return a.sys.tokens + a.tb.Load().tokens }

// usable is the tokens a request may hold: the window less the output
// reserve; zero when the window is unknown.
func (a *Agent) usable() int64 {
	if a.window <= 0 {
		return 0
	}
	return max(a.window-a.reserve, a.window/4)
}

// resolveWindow sets the window and output reserve from the options, the
// request template and the model catalog.
func (a *Agent) resolveWindow() {
	a.window, a.reserve = int64(a.opts.ContextWindow), int64(a.opts.OutputReserve)
	info, known := llm.DefaultCatalog().Lookup(a.targets[0].Model)
	if a.window <= 0 && known {
		a.window = int64(info.ContextWindow)
	}
	if a.reserve <= 0 {
		switch {
		case a.template.MaxTokens > 0:
			a.reserve = int64(a.template.MaxTokens)
		case known && info.MaxOutput > 0:
			a.reserve = int64(min(info.MaxOutput, 32000))
		default:
			a.reserve = 8192
		}
	}
	if a.window > 0 && a.reserve > a.window/2 {
		a.reserve = a.window / 2
	}
}

// Token estimates: about four bytes a token for text and JSON, a flat
// figure for media, a few tokens of framing per message and part.
const (
	tokensPerMessage = 4
	tokensPerPart    = 3
	tokensMedia      = 1600
)

func estimateText(s string) int64 { return int64(len(s)+3) / 4 }

func estimateTool(sp llm.ToolSpec) int64 {
	return tokensPerPart + estimateText(sp.Name) + estimateText(sp.Description) + int64(len(sp.Schema)+3)/4
}

// EstimateTokens estimates the input tokens of messages the way the agent
// does for its context accounting: about four bytes a token.
func EstimateTokens(msgs []llm.Message) int64 {
	var n int64
	for i := range msgs {
		n += tokensPerMessage + estimateParts(msgs[i].Parts)
	}
	return n
}

func estimateParts(parts []llm.Part) int64 {
	var n int64
	for _, p := range parts {
		n += tokensPerPart
		switch p := p.(type) {
		case *llm.Text:
			n += estimateText(p.Text)
		case *llm.Reasoning:
			n += estimateText(p.Text) + int64(len(p.Signature)+len(p.Redacted))/8
		case *llm.ToolCall:
			n += estimateText(p.Name) + int64(len(p.Args)+3)/4
		case *llm.ToolResult:
			n += estimateParts(p.Parts)
		case *llm.Image, *llm.Document:
			n += tokensMedia
		}
	}
	return n
}

// estimateEvent estimates what a content event adds to the conversation.
func estimateEvent(p session.Payload) int64 {
	switch p := p.(type) {
	case *session.UserMessage:
		return tokensPerMessage + estimateParts(p.Parts)
	case *session.ContextMessage:
		return tokensPerMessage + 8 + estimateParts(p.Parts)
	case *session.SteeringMessage:
		return tokensPerMessage + 12 + estimateParts(p.Parts)
	case *session.AssistantMessage:
		if len(p.Parts) == 0 {
			return 0
		}
		return tokensPerMessage + estimateParts(p.Parts)
	case *session.ToolResult:
		return tokensPerPart + estimateParts(p.Parts)
	}
	return 0
}
