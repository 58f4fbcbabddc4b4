package agent_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sqlite"
	"github.com/reinhq/rein/tool"
)

// noopWrite is the no-op tool of the benchmarks declared as nothing, so a
// call of it may not be re-run: a durable step syncs its start.
var noopWrite = &tool.Func{
	ToolSpec: tool.Spec{Name: "noop", Schema: json.RawMessage(`{"type":"object"}`)},
	Fn:       func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text("ok"), nil },
}

// BenchmarkDurableStep measures a step — one model response with one call
// of a tool that may not be re-run, after about 1,000 events — plain and
// durable (Options.Durable: the call's start is synced before it runs),
// on the in-memory store and on SQLite (its default durability, the
// database in the test's temporary directory). One op is one step; the
// difference between plain and durable is the price of durability.
func BenchmarkDurableStep(b *testing.B) {
	for _, store := range []string{"mem", "sqlite"} {
		for _, durable := range []bool{false, true} {
			name := store + "/plain"
			if durable {
				name = store + "/durable"
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				var st session.Store = session.NewMemStore()
				if store == "sqlite" {
					s, err := sqlite.Open(filepath.Join(b.TempDir(), "sessions.db"), nil)
					if err != nil {
						b.Fatal(err)
					}
					st = s
				}
				defer st.Close()
				m := newBenchModel(b, 1000/6)
				a, err := agent.New(&agent.Options{Model: m, Provider: "bench", ModelName: "m", Tools: []tool.Tool{noopWrite},
					Store: st, Limits: agent.Limits{MaxSteps: 1 << 30}, Durable: durable})
				if err != nil {
					b.Fatal(err)
				}
				defer a.Close()
				res, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "go"})
				if err != nil || res.Reason != session.EndCompleted {
					b.Fatalf("run ended %v: %v", res.Reason, err)
				}
			})
		}
	}
}
