package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"

	"github.com/reinhq/rein/llm"
)

// MaxCacheBreakpoints is how many cache_control markers one Messages API
// request may carry.
const MaxCacheBreakpoints = 4

// MinThinkingBudget is the smallest thinking budget the API accepts;
// smaller budgets are raised to it.
const MinThinkingBudget = 1024

// effortBudgets maps ReasoningOptions.Effort to a thinking budget when no
// BudgetTokens is given.
var effortBudgets = map[string]int{
	llm.EffortMinimal: 1024,
	llm.EffortLow:     2048,
	llm.EffortMedium:  8192,
	llm.EffortHigh:    16384,
}

type buildConfig struct {
	provider  string
	model     string
	maxTokens int
}

// BuildParams returns the Messages API request body for req, with the
// package defaults (provider "anthropic", DefaultMaxTokens); Model.Params
// applies a Model's own options. It does not modify req. The body is what
// Stream sends, plus "stream": true.
func BuildParams(req *llm.Request) (sdk.MessageNewParams, error) {
	return buildParams(req, buildConfig{provider: "anthropic", maxTokens: DefaultMaxTokens})
}

// hintRef ties a cache hint to the cache_control field it sets.
type hintRef struct {
	cc   *sdk.CacheControlEphemeralParam
	hint *llm.CacheHint
}

// block is one content block on its way into a message, with the explicit
// cache hints it and its nested blocks carry.
type block struct {
	u      sdk.ContentBlockParamUnion
	result bool // a tool_result, which must lead its user message
	hints  []hintRef
}

type turn struct {
	role   llm.Role
	blocks []block
}

// slot is a place a cache_control marker can go, in prompt order.
type slot struct {
	cc      *sdk.CacheControlEphemeralParam
	message int            // index into the sent messages, -1 for tools and system
	hint    *llm.CacheHint // the explicit hint, if any
	mark    bool           // a breakpoint goes here
	long    bool           // with a 1-hour TTL
}

func buildParams(req *llm.Request, cfg buildConfig) (sdk.MessageNewParams, error) {
	var p sdk.MessageNewParams
	if req == nil {
		return p, fmt.Errorf("anthropic: nil request")
	}
	model := req.Model
	if model == "" {
		model = cfg.model
	}
	if model == "" {
		return p, fmt.Errorf("anthropic: request has no model; set Request.Model or Options.Model (e.g. %q)", "claude-sonnet-4-5")
	}
	p.Model = sdk.Model(model)

	var slots []slot

	// Tools.
	if len(req.Tools) > 0 {
		p.Tools = make([]sdk.ToolUnionParam, len(req.Tools))
		for i := range req.Tools {
			ts := &req.Tools[i]
			if ts.Name == "" {
				return p, fmt.Errorf("anthropic: tool %d has no name", i)
			}
			schema := bytes.TrimSpace(ts.Schema)
			if len(schema) == 0 || string(schema) == "null" {
				schema = []byte(`{"type":"object","properties":{}}`)
			} else if schema[0] != '{' || !json.Valid(schema) {
				return p, fmt.Errorf("anthropic: tool %q: schema is not a JSON object", ts.Name)
			}
			tp := &sdk.ToolParam{
				Name:        ts.Name,
				InputSchema: param.Override[sdk.ToolInputSchemaParam](json.RawMessage(schema)),
			}
			if ts.Description != "" {
				tp.Description = param.NewOpt(ts.Description)
			}
			p.Tools[i] = sdk.ToolUnionParam{OfTool: tp}
			slots = append(slots, slot{cc: &tp.CacheControl, message: -1, hint: ts.Cache})
		}
		p.ToolChoice = toolChoice(req)
	} else if req.ToolChoice.Mode == llm.ToolChoiceTool || req.ToolChoice.Mode == llm.ToolChoiceRequired {
		return p, fmt.Errorf("anthropic: tool choice %q needs tools; add the tool to Request.Tools", req.ToolChoice.Mode)
	}

	// System: the request's sections, then any system-role messages.
	system := make([]sdk.TextBlockParam, 0, len(req.System))
	var systemHints []*llm.CacheHint
	addSystem := func(t *llm.Text) {
		if t.Text == "" {
			return
		}
		system = append(system, sdk.TextBlockParam{Text: t.Text})
		systemHints = append(systemHints, t.Cache)
	}
	for i := range req.System {
		addSystem(&req.System[i])
	}

	// Messages: convert, dropping what the API would reject, and merge
	// consecutive turns of the same role.
	var turns []turn
	for mi := range req.Messages {
		m := &req.Messages[mi]
		switch m.Role {
		case llm.RoleSystem:
			for _, part := range m.Parts {
				if t, ok := part.(*llm.Text); ok {
					addSystem(t)
				}
			}
			continue
		case llm.RoleUser, llm.RoleAssistant:
		default:
			return p, fmt.Errorf("anthropic: message %d has role %q; use user, assistant or system", mi, m.Role)
		}
		keepReasoning := m.Provenance == nil || m.Provenance.Provider == "" || m.Provenance.Provider == cfg.provider
		var blocks []block
		for _, part := range m.Parts {
			b, ok, err := convertPart(part, m.Role, keepReasoning)
			if err != nil {
				return p, fmt.Errorf("anthropic: message %d: %w", mi, err)
			}
			if ok {
				blocks = append(blocks, b)
			}
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(turns); n > 0 && turns[n-1].role == m.Role {
			turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
		} else {
			turns = append(turns, turn{role: m.Role, blocks: blocks})
		}
	}
	if len(turns) == 0 {
		return p, fmt.Errorf("anthropic: request has no messages to send; add a user message")
	}

	if len(system) > 0 {
		p.System = system
		for i, h := range systemHints {
			slots = append(slots, slot{cc: &p.System[i].CacheControl, message: -1, hint: h})
		}
	}

	p.Messages = make([]sdk.MessageParam, len(turns))
	for ti := range turns {
		t := &turns[ti]
		if t.role == llm.RoleUser {
			leadResults(t.blocks)
		}
		content := make([]sdk.ContentBlockParamUnion, len(t.blocks))
		for bi := range t.blocks {
			content[bi] = t.blocks[bi].u
			for _, h := range t.blocks[bi].hints {
				slots = append(slots, slot{cc: h.cc, message: ti, hint: h.hint})
			}
		}
		if t.role == llm.RoleUser {
			p.Messages[ti] = sdk.MessageParam{OfUser: &sdk.UserMessageParam{Content: content}}
		} else {
			p.Messages[ti] = sdk.MessageParam{OfAssistant: &sdk.AssistantMessageParam{Content: content}}
		}
	}

	placeBreakpoints(slots, req.Cache, &p, turns)

	// Sampling.
	maxTokens := req.MaxTokens
	explicitMax := maxTokens > 0
	if !explicitMax {
		maxTokens = cfg.maxTokens
	}
	if req.Reasoning != nil {
		budget := req.Reasoning.BudgetTokens
		if budget == 0 {
			budget = effortBudgets[req.Reasoning.Effort]
		}
		if budget == 0 && req.Reasoning.Effort != "" {
			return p, fmt.Errorf("anthropic: unknown reasoning effort %q; use minimal, low, medium or high, or set BudgetTokens", req.Reasoning.Effort)
		}
		if budget > 0 {
			budget = max(budget, MinThinkingBudget)
			if budget >= maxTokens {
				if explicitMax {
					return p, fmt.Errorf("anthropic: thinking budget %d must be below max_tokens %d; raise MaxTokens or lower the budget", budget, maxTokens)
				}
				maxTokens = budget + cfg.maxTokens
			}
			p.Thinking = sdk.ThinkingConfigParamUnion{OfEnabled: &sdk.ThinkingConfigEnabledParam{BudgetTokens: int64(budget)}}
		}
	}
	p.MaxTokens = int64(maxTokens)
	// This SDK version has no fields for the sampling knobs the API still
	// takes on the models that support them; they ride as extra fields.
	var extra map[string]any
	setExtra := func(k string, v any) {
		if extra == nil {
			extra = make(map[string]any, 3)
		}
		extra[k] = v
	}
	if req.Temperature != nil {
		setExtra("temperature", *req.Temperature)
	}
	if req.TopP != nil {
		setExtra("top_p", *req.TopP)
	}
	if req.TopK != nil {
		setExtra("top_k", *req.TopK)
	}
	if extra != nil {
		p.SetExtraFields(extra)
	}
	if len(req.Stop) > 0 {
		p.StopSequences = req.Stop
	}
	if req.User != "" {
		p.Metadata = sdk.MetadataParam{UserID: param.NewOpt(req.User)}
	}
	if rf := req.ResponseFormat; rf != nil && len(rf.Schema) > 0 {
		var schema map[string]any
		if err := json.Unmarshal(rf.Schema, &schema); err != nil || schema == nil {
			return p, fmt.Errorf("anthropic: response format schema is not a JSON object")
		}
		p.OutputConfig = sdk.OutputConfigParam{Format: sdk.JSONOutputFormatParam{Schema: schema}}
	}
	return p, nil
}

func toolChoice(req *llm.Request) sdk.ToolChoiceUnionParam {
	var noParallel param.Opt[bool]
	if req.ParallelToolCalls != nil && !*req.ParallelToolCalls {
		noParallel = param.NewOpt(true)
	}
	switch req.ToolChoice.Mode {
	case llm.ToolChoiceNone:
		return sdk.ToolChoiceUnionParam{OfNone: &sdk.ToolChoiceNoneParam{}}
	case llm.ToolChoiceRequired:
		return sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{DisableParallelToolUse: noParallel}}
	case llm.ToolChoiceTool:
		return sdk.ToolChoiceUnionParam{OfTool: &sdk.ToolChoiceToolParam{Name: req.ToolChoice.Name, DisableParallelToolUse: noParallel}}
	default:
		if !noParallel.Valid() {
			return sdk.ToolChoiceUnionParam{} // auto is the API's default
		}
		return sdk.ToolChoiceUnionParam{OfAuto: &sdk.ToolChoiceAutoParam{DisableParallelToolUse: noParallel}}
	}
}

// convertPart maps one part to a content block; ok is false for a part
// that is deliberately not sent.
func convertPart(part llm.Part, role llm.Role, keepReasoning bool) (b block, ok bool, err error) {
	switch x := part.(type) {
	case *llm.Text:
		if x.Text == "" {
			return b, false, nil // the API rejects empty text blocks
		}
		tb := &sdk.TextBlockParam{Text: x.Text}
		b.u.OfText = tb
		b.hints = []hintRef{{&tb.CacheControl, x.Cache}}
	case *llm.Reasoning:
		if role != llm.RoleAssistant || !keepReasoning {
			return b, false, nil
		}
		// Thinking blocks cannot carry cache_control; the hint is dropped.
		switch {
		case x.Redacted != "":
			b.u.OfRedactedThinking = &sdk.RedactedThinkingBlockParam{Data: x.Redacted}
		case x.Signature != "":
			b.u.OfThinking = &sdk.ThinkingBlockParam{Thinking: x.Text, Signature: x.Signature}
		default:
			// Unsigned thinking (from another provider, or cut off) would
			// be rejected.
			return b, false, nil
		}
	case *llm.ToolCall:
		if role != llm.RoleAssistant {
			return b, false, fmt.Errorf("tool call %q in a %s message; tool calls belong to assistant messages", x.ID, role)
		}
		tu := &sdk.ToolUseBlockParam{ID: string(x.ID), Name: x.Name, Input: toolInput(x.Args)}
		b.u.OfToolUse = tu
		b.hints = []hintRef{{&tu.CacheControl, x.Cache}}
	case *llm.ToolResult:
		if role != llm.RoleUser {
			return b, false, fmt.Errorf("tool result %q in a %s message; tool results ride user messages", x.CallID, role)
		}
		tr := &sdk.ToolResultBlockParam{ToolUseID: string(x.CallID)}
		if x.IsError {
			tr.IsError = param.NewOpt(true)
		}
		for _, inner := range x.Parts {
			c, h, ok, err := resultContent(inner)
			if err != nil {
				return b, false, fmt.Errorf("tool result %q: %w", x.CallID, err)
			}
			if ok {
				tr.Content = append(tr.Content, c)
				if h.hint != nil {
					b.hints = append(b.hints, h)
				}
			}
		}
		b.u.OfToolResult = tr
		b.result = true
		b.hints = append(b.hints, hintRef{&tr.CacheControl, x.Cache})
	case *llm.Image:
		ib, err := imageBlock(x)
		if err != nil {
			return b, false, err
		}
		b.u.OfImage = ib
		b.hints = []hintRef{{&ib.CacheControl, x.Cache}}
	case *llm.Document:
		db, err := documentBlock(x)
		if err != nil {
			return b, false, err
		}
		b.u.OfDocument = db
		b.hints = []hintRef{{&db.CacheControl, x.Cache}}
	case nil:
		return b, false, fmt.Errorf("nil part")
	default:
		return b, false, fmt.Errorf("unsupported part type %T", part)
	}
	return b, true, nil
}

// toolInput returns a tool call's arguments as the JSON object the API
// requires: empty arguments become {}, and so do arguments that are not a
// JSON object (a malformed call the model made earlier).
func toolInput(args json.RawMessage) json.RawMessage {
	a := bytes.TrimSpace(args)
	if len(a) == 0 || a[0] != '{' || !json.Valid(a) {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(a)
}

func resultContent(p llm.Part) (sdk.ToolResultBlockParamContentUnion, hintRef, bool, error) {
	var c sdk.ToolResultBlockParamContentUnion
	switch x := p.(type) {
	case *llm.Text:
		if x.Text == "" {
			return c, hintRef{}, false, nil
		}
		tb := &sdk.TextBlockParam{Text: x.Text}
		c.OfText = tb
		return c, hintRef{&tb.CacheControl, x.Cache}, true, nil
	case *llm.Image:
		ib, err := imageBlock(x)
		if err != nil {
			return c, hintRef{}, false, err
		}
		c.OfImage = ib
		return c, hintRef{&ib.CacheControl, x.Cache}, true, nil
	case *llm.Document:
		db, err := documentBlock(x)
		if err != nil {
			return c, hintRef{}, false, err
		}
		c.OfDocument = db
		return c, hintRef{&db.CacheControl, x.Cache}, true, nil
	default:
		// Reasoning, calls and results have no place inside a result.
		return c, hintRef{}, false, nil
	}
}

func imageBlock(x *llm.Image) (*sdk.ImageBlockParam, error) {
	ib := &sdk.ImageBlockParam{}
	switch {
	case len(x.Data) > 0:
		mt := x.MediaType
		if mt == "" {
			mt = http.DetectContentType(x.Data)
		}
		switch mt {
		case "image/jpeg", "image/png", "image/gif", "image/webp":
		default:
			return nil, fmt.Errorf("image of type %q; the API takes image/jpeg, image/png, image/gif or image/webp", mt)
		}
		ib.Source.OfBase64 = &sdk.Base64ImageSourceParam{
			Data:      base64.StdEncoding.EncodeToString(x.Data),
			MediaType: sdk.Base64ImageSourceMediaType(mt),
		}
	case x.URL != "":
		ib.Source.OfURL = &sdk.URLImageSourceParam{URL: x.URL}
	default:
		return nil, fmt.Errorf("image has neither data nor URL")
	}
	return ib, nil
}

func documentBlock(x *llm.Document) (*sdk.DocumentBlockParam, error) {
	db := &sdk.DocumentBlockParam{}
	if x.Title != "" {
		db.Title = param.NewOpt(x.Title)
	}
	switch {
	case len(x.Data) > 0:
		mt := x.MediaType
		if mt == "" {
			mt = http.DetectContentType(x.Data)
		}
		switch {
		case mt == "application/pdf":
			db.Source.OfBase64 = &sdk.Base64PDFSourceParam{Data: base64.StdEncoding.EncodeToString(x.Data)}
		case strings.HasPrefix(mt, "text/"):
			db.Source.OfText = &sdk.PlainTextSourceParam{Data: string(x.Data)}
		default:
			return nil, fmt.Errorf("document of type %q; the API takes application/pdf or text", mt)
		}
	case x.URL != "":
		db.Source.OfURL = &sdk.URLPDFSourceParam{URL: x.URL}
	default:
		return nil, fmt.Errorf("document has neither data nor URL")
	}
	return db, nil
}

// leadResults moves tool_result blocks to the front of a user message,
// keeping the order within each group: the API wants results first.
func leadResults(bs []block) {
	sorted := true
	seenOther := false
	for i := range bs {
		if !bs[i].result {
			seenOther = true
		} else if seenOther {
			sorted = false
			break
		}
	}
	if sorted {
		return
	}
	out := make([]block, 0, len(bs))
	for _, b := range bs {
		if b.result {
			out = append(out, b)
		}
	}
	for _, b := range bs {
		if !b.result {
			out = append(out, b)
		}
	}
	copy(bs, out)
}

func isLong(h *llm.CacheHint) bool { return h != nil && h.TTL >= time.Hour }

// lastCacheable returns the cache_control of the last block of a message
// that can carry one (thinking blocks cannot), or nil.
func lastCacheable(content []sdk.ContentBlockParamUnion) *sdk.CacheControlEphemeralParam {
	for i := len(content) - 1; i >= 0; i-- {
		c := &content[i]
		switch {
		case c.OfText != nil:
			return &c.OfText.CacheControl
		case c.OfToolUse != nil:
			return &c.OfToolUse.CacheControl
		case c.OfToolResult != nil:
			return &c.OfToolResult.CacheControl
		case c.OfImage != nil:
			return &c.OfImage.CacheControl
		case c.OfDocument != nil:
			return &c.OfDocument.CacheControl
		}
	}
	return nil
}

func messageContent(m *sdk.MessageParam) []sdk.ContentBlockParamUnion {
	if m.OfUser != nil {
		return m.OfUser.Content
	}
	if m.OfAssistant != nil {
		return m.OfAssistant.Content
	}
	return nil
}

// placeBreakpoints marks the explicit hints and, when auto is non-nil,
// the automatic breakpoints: the last tool, the last system section, the
// newest message, and the previous user turn when there is room (a spot
// with an explicit hint keeps it). At most MaxCacheBreakpoints are
// written: extras are dropped oldest message first, tools and system
// last, since they are the most stable prefix. A breakpoint before a
// 1-hour one is raised to 1 hour, as the API requires longer TTLs first.
func placeBreakpoints(slots []slot, auto *llm.CacheHint, p *sdk.MessageNewParams, turns []turn) {
	n := 0
	for i := range slots {
		if slots[i].hint != nil {
			slots[i].mark, slots[i].long = true, isLong(slots[i].hint)
			n++
		}
	}
	if auto != nil {
		mark := func(cc *sdk.CacheControlEphemeralParam) {
			if cc == nil {
				return
			}
			for i := range slots {
				if slots[i].cc == cc {
					if !slots[i].mark {
						slots[i].mark, slots[i].long = true, isLong(auto)
						n++
					}
					return
				}
			}
		}
		if k := len(p.Tools); k > 0 {
			mark(&p.Tools[k-1].OfTool.CacheControl)
		}
		if k := len(p.System); k > 0 {
			mark(&p.System[k-1].CacheControl)
		}
		last := len(p.Messages) - 1
		mark(lastCacheable(messageContent(&p.Messages[last])))
		if n < MaxCacheBreakpoints {
			for i := last - 1; i >= 0; i-- {
				if turns[i].role == llm.RoleUser {
					mark(lastCacheable(messageContent(&p.Messages[i])))
					break
				}
			}
		}
	}
	// Drop the oldest message breakpoints first, then the earliest.
	for _, messagesOnly := range []bool{true, false} {
		for i := 0; i < len(slots) && n > MaxCacheBreakpoints; i++ {
			if slots[i].mark && (!messagesOnly || slots[i].message >= 0) {
				slots[i].mark = false
				n--
			}
		}
	}
	long := false
	for i := len(slots) - 1; i >= 0; i-- {
		s := &slots[i]
		if !s.mark {
			continue
		}
		long = long || s.long
		*s.cc = sdk.NewCacheControlEphemeralParam()
		if long {
			s.cc.TTL = sdk.CacheControlEphemeralTTLTTL1h
		}
	}
}
