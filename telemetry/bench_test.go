package telemetry_test

import (
	"context"
	"strconv"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/telemetry"
	"github.com/reinhq/rein/tool"
)

// BenchmarkStep runs one turn of b.N steps (each a tool call of the echo
// tool) with telemetry off and on — the SDK's batching span processor and
// a discarding exporter — and includes the agent's Close, which waits for
// the observer to handle every event, so the asynchronous work is counted.
// The difference between the two is the per-step cost of telemetry.
func BenchmarkStep(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run("telemetry="+strconv.FormatBool(on), func(b *testing.B) {
			b.ReportAllocs()
			entries := make([]llmtest.Entry, 0, b.N+1)
			for i := range b.N {
				entries = append(entries, llmtest.CallTool("c"+strconv.Itoa(i), "echo", `{"text":"x"}`))
			}
			entries = append(entries, llmtest.Reply("done"))
			var hooks *hook.Set
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
			defer tp.Shutdown(context.Background())
			obs := telemetry.New(&telemetry.Options{TracerProvider: tp})
			if on {
				hooks = obs.Register(nil)
			}
			a, err := agent.New(&agent.Options{Model: llmtest.NewModel(entries...), Provider: "llmtest", ModelName: "scripted",
				Tools: []tool.Tool{echoTool(b)}, Hooks: hooks, Limits: agent.Limits{MaxSteps: 1 << 30}})
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			if _, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "go"}); err != nil {
				b.Fatal(err)
			}
			if err := a.Close(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			obs.Close()
		})
	}
}
