package telemetry

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// SchemaURL is the semantic conventions version the spans and metrics follow.
const SchemaURL = semconv.SchemaURL

const scope = "github.com/reinhq/rein/telemetry"

// Options configures an Observer. The zero value uses the global
// providers and captures no content.
type Options struct {
	// TracerProvider creates the spans; nil means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// MeterProvider creates the metrics; nil means otel.GetMeterProvider().
	MeterProvider metric.MeterProvider
	// AgentName names the main agent, whose events carry no agent name;
	// empty means "rein".
	AgentName string
	// CaptureContent puts system instructions, messages, tool arguments
	// and results on the spans, each through Redact. Off by default:
	// content often holds what must not leave the process.
	CaptureContent bool
	// Redact filters captured content; nil passes it unchanged.
	Redact *Redactor
	// Logger reports instruments that could not be created; nil discards.
	Logger *slog.Logger
}

// Observer turns session events into spans and metrics. Register it on
// a hook.Set; it is safe for concurrent use. Close ends the spans of runs
// that never finished.
type Observer struct {
	opts     Options
	redact   Redactor
	tracer   trace.Tracer
	tokens   metric.Int64Histogram
	duration metric.Float64Histogram
	ttfc     metric.Float64Histogram

	mu     sync.Mutex
	seen   *sync.Cond // broadcast after each event, for awaitCall
	runs   map[session.RunID]*runSpan
	header map[session.ID]*session.RequestHeader // the last one of each session
	calls  map[callKey]trace.SpanContext         // the open execute_tool spans
	first  map[session.ID][]firstChunk           // first chunks not yet matched to a response
}

// runSpan is the state of one run's invoke_agent span.
type runSpan struct {
	ctx     context.Context
	span    trace.Span
	session session.ID
	chat    *chatSpan
	tools   map[llm.CallID]trace.Span
	pending []message // content logged since the last model request
}

type chatSpan struct {
	span     trace.Span
	ctx      context.Context
	start    time.Time
	provider string
	model    string
}

// New returns an Observer.
func New(opts *Options) *Observer {
	o := &Observer{runs: map[session.RunID]*runSpan{}, header: map[session.ID]*session.RequestHeader{},
		calls: map[callKey]trace.SpanContext{}, first: map[session.ID][]firstChunk{}}
	o.seen = sync.NewCond(&o.mu)
	if opts != nil {
		o.opts = *opts
	}
	if o.opts.Redact != nil {
		o.redact = *o.opts.Redact
	}
	if o.opts.AgentName == "" {
		o.opts.AgentName = "rein"
	}
	if o.opts.Logger == nil {
		o.opts.Logger = slog.New(slog.DiscardHandler)
	}
	tp, mp := o.opts.TracerProvider, o.opts.MeterProvider
	if tp == nil {
		tp = otel.GetTracerProvider()
	}
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	o.tracer = tp.Tracer(scope, trace.WithSchemaURL(SchemaURL))
	meter := mp.Meter(scope, metric.WithSchemaURL(SchemaURL))
	var err error
	o.tokens, err = meter.Int64Histogram("gen_ai.client.token.usage",
		metric.WithUnit("{token}"), metric.WithDescription("Number of input and output tokens used."),
		metric.WithExplicitBucketBoundaries(1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864))
	if err != nil {
		o.opts.Logger.Warn("telemetry: no token usage metric", "err", err)
	}
	o.duration, err = meter.Float64Histogram("gen_ai.client.operation.duration",
		metric.WithUnit("s"), metric.WithDescription("GenAI operation duration."),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92))
	if err != nil {
		o.opts.Logger.Warn("telemetry: no operation duration metric", "err", err)
	}
	o.ttfc, err = meter.Float64Histogram("gen_ai.client.operation.time_to_first_chunk",
		metric.WithUnit("s"), metric.WithDescription("Time to receive the first chunk of a streamed response."),
		metric.WithExplicitBucketBoundaries(0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92))
	if err != nil {
		o.opts.Logger.Warn("telemetry: no time to first chunk metric", "err", err)
	}
	return o
}

// Register subscribes o to every logged event and to the transient
// compaction progress of s, and adds what the loop must tell it as it
// happens: model middleware that times each response's first chunk, and
// tool middleware that runs each call under its execute_tool span's
// context (so an MCP request carries it). It returns s; a nil s is
// replaced by a new Set.
func (o *Observer) Register(s *hook.Set) *hook.Set {
	if s == nil {
		s = new(hook.Set)
	}
	s.Observe("telemetry", "*", o.Observe)
	s.Observe("telemetry", session.TypeCompactionProgress, o.Observe)
	s.WrapModel(o.timeFirstChunk)
	s.WrapTool(o.traceTools)
	return s
}

// Observe handles one event. It is a hook.Observer.
func (o *Observer) Observe(ev session.Event) {
	o.mu.Lock()
	defer o.mu.Unlock()
	defer o.seen.Broadcast()
	switch p := ev.Data.(type) {
	case *session.TurnStart:
		o.startRun(ev, p.Trigger)
	case *session.TurnEnd:
		o.endRun(ev, p)
	case *session.RequestHeader:
		o.header[ev.Session] = p
		if r := o.runs[runKey(ev)]; r != nil && r.chat != nil {
			o.describeChat(r.chat, p)
		}
	case *session.StepStart:
		o.startChat(ev)
	case *session.AssistantMessage:
		o.endChat(ev, p)
	case *session.Retry:
		o.chatEvent(ev, "gen_ai.request.retry", attribute.Int("rein.retry.attempt", p.Attempt),
			semconv.ErrorTypeKey.String(p.Kind), attribute.Float64("rein.retry.delay", p.Delay.Seconds()))
	case *session.Fallback:
		o.chatEvent(ev, "gen_ai.request.fallback",
			attribute.String("rein.fallback.from_provider", p.FromProvider), attribute.String("rein.fallback.from_model", p.FromModel),
			attribute.String("rein.fallback.to_provider", p.ToProvider), attribute.String("rein.fallback.to_model", p.ToModel))
	case *session.ToolCall:
		o.startTool(ev, p)
	case *session.ToolResult:
		o.endTool(ev, p)
	case *session.HookDecision:
		o.hookDecision(ev, p)
	case *session.Decision:
		o.decision(ev, p)
	case *session.Compaction:
		o.runEvent(ev, "rein.compaction", attribute.Int64("rein.compaction.from_seq", p.FromSeq),
			attribute.Int64("rein.compaction.to_seq", p.ToSeq), attribute.Int64("rein.compaction.tokens_before", p.TokensBefore),
			attribute.Int64("rein.compaction.tokens_after", p.TokensAfter))
	case *session.CompactionProgress:
		// Only a failure: a success is the logged compaction event. It
		// comes on a goroutine of its own, so its run may have ended.
		if p.Phase == "failed" {
			o.runEvent(ev, "rein.compaction.failed", attribute.Bool("rein.compaction.auto", p.Auto))
		}
	case *session.UserMessage:
		o.keep(ev, "user", p.Parts)
	case *session.ContextMessage:
		o.keep(ev, "user", p.Parts)
	case *session.SteeringMessage:
		o.keep(ev, "user", p.Parts)
	}
}

// Close ends, as unfinished, the spans of runs whose end was never seen.
// Call it after the agent's Close, which delivers the last events.
func (o *Observer) Close() {
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	for k, r := range o.runs {
		o.closeChildren(r, now)
		r.span.SetStatus(codes.Error, "the run did not finish")
		r.span.End(trace.WithTimestamp(now))
		delete(o.runs, k)
	}
}

// runKey is the run an event belongs to; records written outside a run
// (an inject between runs) are keyed by their turn.
func runKey(ev session.Event) session.RunID {
	if ev.Run != "" {
		return ev.Run
	}
	return session.RunID(ev.Turn)
}

func (o *Observer) agentName(ev session.Event) string {
	if ev.Agent != "" {
		return ev.Agent
	}
	return o.opts.AgentName
}

// startRun opens the span of a turn: invoke_agent for a prompt's, and
// rein.{trigger} for the turns that record a compaction or an inject.
func (o *Observer) startRun(ev session.Event, trigger string) {
	ctx := context.Background()
	if parent := o.runs[ev.ParentRun]; ev.ParentRun != "" && parent != nil {
		ctx = parent.ctx // a subagent's run is a child of its parent's
	}
	name := o.agentName(ev)
	attrs := []attribute.KeyValue{semconv.GenAIAgentName(name), semconv.GenAIConversationID(string(ev.Session)),
		attribute.String("rein.turn.trigger", trigger)}
	if ev.Run != "" {
		attrs = append(attrs, attribute.String("rein.run.id", string(ev.Run)))
	}
	spanName := "rein." + trigger
	if trigger == session.TriggerPrompt {
		spanName = "invoke_agent " + name
		attrs = append(attrs, semconv.GenAIOperationNameInvokeAgent)
	}
	ctx, span := o.tracer.Start(ctx, spanName, trace.WithTimestamp(ev.Time), trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attrs...))
	o.runs[runKey(ev)] = &runSpan{ctx: ctx, span: span, session: ev.Session, tools: map[llm.CallID]trace.Span{}}
}

func (o *Observer) endRun(ev session.Event, p *session.TurnEnd) {
	k := runKey(ev)
	r := o.runs[k]
	if r == nil {
		return
	}
	o.closeChildren(r, ev.Time)
	r.span.SetAttributes(attribute.String("rein.turn.end_reason", string(p.Reason)))
	if p.Reason == session.EndError {
		errType := p.Code
		if errType == "" {
			errType = string(p.Reason)
		}
		r.span.SetAttributes(semconv.ErrorTypeKey.String(errType))
		r.span.SetStatus(codes.Error, string(p.Reason))
	}
	r.span.End(trace.WithTimestamp(ev.Time))
	delete(o.runs, k)
	delete(o.first, ev.Session)
}

// closeChildren ends a run's open chat and tool spans, as at a cancel.
func (o *Observer) closeChildren(r *runSpan, at time.Time) {
	if r.chat != nil {
		r.chat.span.SetStatus(codes.Error, "no response")
		r.chat.span.End(trace.WithTimestamp(at))
		r.chat = nil
	}
	for id, s := range r.tools {
		s.SetStatus(codes.Error, "no result")
		s.End(trace.WithTimestamp(at))
		delete(r.tools, id)
		delete(o.calls, callKey{r.session, id})
	}
}

// runEvent adds a span event to the run's span or, for an event outside
// any run (a compaction asked for between runs), records it as a span of
// its own.
func (o *Observer) runEvent(ev session.Event, name string, attrs ...attribute.KeyValue) {
	if r := o.runs[runKey(ev)]; r != nil {
		r.span.AddEvent(name, trace.WithTimestamp(ev.Time), trace.WithAttributes(attrs...))
		return
	}
	attrs = append(attrs, semconv.GenAIConversationID(string(ev.Session)))
	_, span := o.tracer.Start(context.Background(), name, trace.WithTimestamp(ev.Time), trace.WithAttributes(attrs...))
	span.End(trace.WithTimestamp(ev.Time))
}

func (o *Observer) hookDecision(ev session.Event, p *session.HookDecision) {
	kv := []attribute.KeyValue{attribute.String("rein.hook.point", p.Point), attribute.String("rein.hook.name", p.Hook),
		attribute.String("rein.hook.decision", p.Decision)}
	if p.CallID != "" {
		kv = append(kv, semconv.GenAIToolCallID(string(p.CallID)))
	}
	if r := o.runs[runKey(ev)]; r != nil && r.tools[p.CallID] != nil {
		r.tools[p.CallID].AddEvent("rein.hook.decision", trace.WithTimestamp(ev.Time), trace.WithAttributes(kv...))
		return
	}
	o.runEvent(ev, "rein.hook.decision", kv...)
}
