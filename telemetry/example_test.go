package telemetry_test

import (
	"context"
	"fmt"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/telemetry"
)

// An agent traced into an in-memory exporter, with content captured and
// e-mail addresses masked.
func Example() {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	obs := telemetry.New(&telemetry.Options{
		TracerProvider: tp,
		CaptureContent: true,
		Redact: telemetry.RedactAll(func(s string) string {
			return strings.ReplaceAll(s, "ada@example.com", "[email]")
		}),
	})
	a, err := agent.New(&agent.Options{
		Model: llmtest.NewModel(llmtest.Reply("Hello, Ada.")), Provider: "llmtest", ModelName: "scripted",
		Hooks: obs.Register(nil),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "I am ada@example.com"}); err != nil {
		fmt.Println(err)
	}
	a.Close() // delivers the last events to the observer
	obs.Close()
	for _, s := range spans.GetSpans() {
		fmt.Println(s.Name)
		for _, kv := range s.Attributes {
			if kv.Key == "gen_ai.input.messages" {
				fmt.Println(" ", kv.Value.AsString())
			}
		}
	}
	// Output:
	// chat scripted
	//   [{"role":"user","parts":[{"type":"text","content":"I am [email]"}]}]
	// invoke_agent rein
}
