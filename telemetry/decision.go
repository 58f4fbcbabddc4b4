package telemetry

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// decision puts a typed decision on the span of the tool call that asked
// it, or else of its run, as a "rein.decision" event: kind, answer,
// model, attempts, tokens and cost, and — with content capture on — the
// question, options and reason through Redact.Decision. Its tokens count
// in gen_ai.client.token.usage.
func (o *Observer) decision(ev session.Event, p *session.Decision) {
	kv := []attribute.KeyValue{attribute.String("rein.decision.kind", p.Kind), attribute.Int("rein.decision.attempts", p.Attempts),
		semconv.GenAIProviderNameKey.String(p.Provider), semconv.GenAIRequestModel(p.Model),
		semconv.GenAIUsageInputTokens(int(p.Usage.PromptTokens())), semconv.GenAIUsageOutputTokens(int(p.Usage.Output)),
		attribute.Float64("rein.decision.cost", p.Cost)}
	switch {
	case p.Error != "":
		cause, _, _ := strings.Cut(p.Error, ":")
		kv = append(kv, semconv.ErrorTypeKey.String(cause))
	case p.Kind == "choice" && !o.opts.CaptureContent:
		// The options are content; the chosen one's place is not.
		for i, opt := range p.Options {
			if opt == p.Choice {
				kv = append(kv, attribute.Int("rein.decision.choice_index", i))
			}
		}
	case p.Kind != "choice":
		kv = append(kv, attribute.Float64("rein.decision.value", p.Value))
	}
	if o.opts.CaptureContent {
		red := func(s string) string { return apply(o.redact.Decision, s) }
		kv = append(kv, attribute.String("rein.decision.question", red(p.Question)), attribute.String("rein.decision.reason", red(p.Reason)))
		if p.Kind == "choice" {
			opts := make([]string, len(p.Options))
			for i, s := range p.Options {
				opts[i] = red(s)
			}
			kv = append(kv, attribute.StringSlice("rein.decision.options", opts), attribute.String("rein.decision.choice", red(p.Choice)))
		}
	}
	if o.tokens != nil && p.Usage != (llm.Usage{}) { // the decision model's tokens are spent like any request's
		set := []attribute.KeyValue{semconv.GenAIOperationNameChat, semconv.GenAIProviderNameKey.String(p.Provider), semconv.GenAIRequestModel(p.Model)}
		ctx := context.Background()
		o.tokens.Record(ctx, p.Usage.PromptTokens(), metric.WithAttributes(append(set, semconv.GenAITokenTypeInput)...))
		o.tokens.Record(ctx, p.Usage.Output, metric.WithAttributes(append(set, semconv.GenAITokenTypeOutput)...))
	}
	if r := o.runs[runKey(ev)]; r != nil && p.CallID != "" && r.tools[p.CallID] != nil {
		r.tools[p.CallID].AddEvent("rein.decision", trace.WithTimestamp(ev.Time), trace.WithAttributes(kv...))
		return
	}
	o.runEvent(ev, "rein.decision", kv...)
}
