package telemetry

import (
	"context"
	"encoding/json"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

func (o *Observer) startChat(ev session.Event) {
	r := o.runs[runKey(ev)]
	if r == nil {
		return
	}
	if r.chat != nil { // a step whose response was never logged
		r.chat.span.End(trace.WithTimestamp(ev.Time))
	}
	ctx, span := o.tracer.Start(r.ctx, "chat", trace.WithTimestamp(ev.Time), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(semconv.GenAIOperationNameChat, semconv.GenAIConversationID(string(ev.Session))))
	r.chat = &chatSpan{span: span, ctx: ctx, start: ev.Time}
	if h := o.header[ev.Session]; h != nil {
		o.describeChat(r.chat, h)
	}
}

// describeChat names a chat span after the request's model.
func (o *Observer) describeChat(c *chatSpan, h *session.RequestHeader) {
	c.provider, c.model = h.Provider, h.Model
	c.span.SetName("chat " + h.Model)
	c.span.SetAttributes(semconv.GenAIProviderNameKey.String(h.Provider), semconv.GenAIRequestModel(h.Model))
	if o.opts.CaptureContent && len(h.System) > 0 {
		parts := make([]contentPart, len(h.System))
		for i, t := range h.System {
			parts[i] = contentPart{Type: "text", Content: apply(o.redact.System, t.Text)}
		}
		c.span.SetAttributes(semconv.GenAISystemInstructionsKey.String(marshal(parts)))
	}
}

func (o *Observer) chatEvent(ev session.Event, name string, attrs ...attribute.KeyValue) {
	r := o.runs[runKey(ev)]
	if r == nil || r.chat == nil {
		o.runEvent(ev, name, attrs...)
		return
	}
	r.chat.span.AddEvent(name, trace.WithTimestamp(ev.Time), trace.WithAttributes(attrs...))
}

func (o *Observer) endChat(ev session.Event, p *session.AssistantMessage) {
	r := o.runs[runKey(ev)]
	if r == nil || r.chat == nil {
		return
	}
	c := r.chat
	r.chat = nil
	provider, model := c.provider, c.model
	if p.Provenance != nil {
		provider = p.Provenance.Provider
		c.span.SetAttributes(semconv.GenAIResponseModel(p.Provenance.Model), semconv.GenAIProviderNameKey.String(provider))
		model = p.Provenance.Model
	}
	u := p.Usage
	c.span.SetAttributes(
		semconv.GenAIResponseFinishReasons(finishReason(p.Finish)),
		semconv.GenAIUsageInputTokens(int(u.PromptTokens())), // includes cached tokens, as the conventions ask
		semconv.GenAIUsageOutputTokens(int(u.Output)),
		semconv.GenAIUsageCacheReadInputTokens(int(u.CacheRead)),
		semconv.GenAIUsageCacheCreationInputTokens(int(u.CacheWrite)))
	if o.opts.CaptureContent {
		if len(r.pending) > 0 {
			c.span.SetAttributes(semconv.GenAIInputMessagesKey.String(marshal(r.pending)))
			r.pending = nil
		}
		out := message{Role: "assistant", Parts: o.parts(p.Parts, o.redact.Text), Finish: finishReason(p.Finish)}
		c.span.SetAttributes(semconv.GenAIOutputMessagesKey.String(marshal([]message{out})))
	}
	if p.Interrupted || p.Finish == llm.FinishError {
		c.span.SetStatus(codes.Error, string(p.Finish))
	}
	var ttfc time.Duration
	streamed := false
	if !p.Interrupted { // an interrupted response's stream was not read to its end
		ttfc, streamed = o.takeFirstChunk(ev.Session, ev.Time)
	}
	if streamed {
		c.span.SetAttributes(attribute.Float64("gen_ai.response.time_to_first_chunk", ttfc.Seconds()))
	}
	c.span.End(trace.WithTimestamp(ev.Time))
	if !streamed {
		ttfc = -1
	}
	o.measure(c, provider, model, ev.Time, u, ttfc)
}

// measure records a model request's duration, token usage and, when it
// streamed (ttfc ≥ 0), its time to first chunk.
func (o *Observer) measure(c *chatSpan, provider, model string, end time.Time, u llm.Usage, ttfc time.Duration) {
	set := []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(provider),
		semconv.GenAIRequestModel(c.model), semconv.GenAIResponseModel(model)}
	if o.duration != nil {
		o.duration.Record(c.ctx, end.Sub(c.start).Seconds(), metric.WithAttributes(set...))
	}
	if o.tokens != nil {
		o.tokens.Record(c.ctx, u.PromptTokens(), metric.WithAttributes(append(set, semconv.GenAITokenTypeInput)...))
		o.tokens.Record(c.ctx, u.Output, metric.WithAttributes(append(set, semconv.GenAITokenTypeOutput)...))
	}
	if o.ttfc != nil && ttfc >= 0 {
		o.ttfc.Record(c.ctx, ttfc.Seconds(), metric.WithAttributes(set...))
	}
}

func (o *Observer) startTool(ev session.Event, p *session.ToolCall) {
	r := o.runs[runKey(ev)]
	if r == nil {
		return
	}
	r.tools[p.CallID] = o.toolSpan(r.ctx, ev, p.Name, p.CallID, p.Origin, ev.Time)
	o.calls[callKey{ev.Session, p.CallID}] = r.tools[p.CallID].SpanContext()
	if o.opts.CaptureContent && len(p.Args) > 0 {
		r.tools[p.CallID].SetAttributes(semconv.GenAIToolCallArgumentsKey.String(apply(o.redact.ToolInput, string(p.Args))))
	}
}

func (o *Observer) toolSpan(ctx context.Context, ev session.Event, name string, id llm.CallID, origin string, at time.Time) trace.Span {
	typ := "function"
	if origin == "mcp" {
		typ = "extension"
	}
	_, span := o.tracer.Start(ctx, "execute_tool "+name, trace.WithTimestamp(at), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(semconv.GenAIOperationNameExecuteTool, semconv.GenAIToolName(name),
			semconv.GenAIToolCallID(string(id)), semconv.GenAIToolType(typ), semconv.GenAIConversationID(string(ev.Session))))
	return span
}

func (o *Observer) endTool(ev session.Event, p *session.ToolResult) {
	r := o.runs[runKey(ev)]
	if r == nil {
		return
	}
	span := r.tools[p.CallID]
	delete(r.tools, p.CallID)
	delete(o.calls, callKey{ev.Session, p.CallID})
	if span == nil { // a call that never ran: denied, unknown, invalid
		span = o.toolSpan(r.ctx, ev, p.Name, p.CallID, "", ev.Time.Add(-p.Duration))
	}
	span.SetAttributes(attribute.String("rein.tool.outcome", p.Outcome))
	if p.IsError {
		errType := p.Code
		if errType == "" {
			errType = "tool_error"
		}
		span.SetAttributes(semconv.ErrorTypeKey.String(errType))
		span.SetStatus(codes.Error, errType)
	}
	if o.opts.CaptureContent {
		span.SetAttributes(semconv.GenAIToolCallResultKey.String(marshal(o.parts(p.Parts, o.redact.ToolResult))))
	}
	span.End(trace.WithTimestamp(ev.Time))
}

// keep holds a message logged before a model request, for that request's
// gen_ai.input.messages: only what is new since the previous request,
// never the whole history.
func (o *Observer) keep(ev session.Event, role string, parts llm.PartList) {
	if !o.opts.CaptureContent {
		return
	}
	if r := o.runs[runKey(ev)]; r != nil {
		r.pending = append(r.pending, message{Role: role, Parts: o.parts(parts, o.redact.Prompt)})
	}
}

// message and contentPart are the JSON shapes of the conventions'
// gen_ai.input.messages and gen_ai.output.messages.
type message struct {
	Role   string        `json:"role"`
	Parts  []contentPart `json:"parts"`
	Finish string        `json:"finish_reason,omitempty"`
}

type contentPart struct {
	Type      string `json:"type"`
	Content   string `json:"content,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
}

// parts renders parts for capture, text through redact, reasoning and
// tool arguments through their own redactors.
func (o *Observer) parts(ps []llm.Part, redact func(string) string) []contentPart {
	out := make([]contentPart, 0, len(ps))
	for _, p := range ps {
		switch p := p.(type) {
		case *llm.Text:
			out = append(out, contentPart{Type: "text", Content: apply(redact, p.Text)})
		case *llm.Reasoning:
			out = append(out, contentPart{Type: "reasoning", Content: apply(o.redact.Reasoning, p.Text)})
		case *llm.ToolCall:
			out = append(out, contentPart{Type: "tool_call", ID: string(p.ID), Name: p.Name, Arguments: apply(o.redact.ToolInput, string(p.Args))})
		case *llm.ToolResult:
			out = append(out, contentPart{Type: "tool_call_response", ID: string(p.CallID), Content: marshal(o.parts(p.Parts, o.redact.ToolResult))})
		default:
			out = append(out, contentPart{Type: "blob"}) // images and documents are never captured
		}
	}
	return out
}

// finishReason names a finish as the conventions do; a reason they have
// no name for (aborted) keeps rein's.
func finishReason(f llm.FinishReason) string {
	switch f {
	case llm.FinishToolCalls:
		return "tool_call"
	case llm.FinishMaxTokens:
		return "length"
	case llm.FinishFiltered:
		return "content_filter"
	}
	return string(f)
}

func marshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}
