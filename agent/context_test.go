package agent_test

import (
	"context"
	"flag"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// countingModel is a scripted model that also counts tokens exactly.
type countingModel struct {
	*llmtest.Model
	n int64
}

func (m *countingModel) CountTokens(context.Context, *llm.Request) (int64, error) { return m.n, nil }

func TestContextBreakdown(t *testing.T) {
	h := newHarness(t, &agent.Options{
		ModelName: "claude-sonnet-4-5",
		System:    "You are careful.",
		SystemSections: []agent.SystemSection{
			{Kind: agent.SectionRules, Name: "AGENTS.md", Text: strings.Repeat("Run the tests. ", 40)},
			{Kind: agent.SectionSkills, Text: "skills: pdf, xlsx"},
		},
		Tools: []tool.Tool{echoTool()},
	}, llmtest.Reply(strings.Repeat("answer ", 100)))
	before, err := h.a.Context(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	info, _ := llm.DefaultCatalog().Lookup("claude-sonnet-4-5")
	if before.Window != int64(info.ContextWindow) || before.OutputReserve <= 0 || before.Exact {
		t.Errorf("window %d reserve %d exact %v", before.Window, before.OutputReserve, before.Exact)
	}
	var kinds []string
	for _, s := range before.System {
		kinds = append(kinds, s.Kind+":"+s.Name)
	}
	if diff := cmp.Diff([]string{"host:system", "rules:AGENTS.md", "skills:"}, kinds); diff != "" {
		t.Errorf("sections (-want +got):\n%s", diff)
	}
	if before.System[1].Tokens < 100 || before.ToolTokens <= 0 || before.Messages != 0 || before.ConversationTokens != 0 {
		t.Errorf("before the first run: %+v", before)
	}
	if before.Total != before.SystemTokens+before.ToolTokens || before.Free != before.Window-before.OutputReserve-before.Total {
		t.Errorf("sums: %+v", before)
	}
	h.run(strings.Repeat("question ", 50))
	after, _ := h.a.Context(context.Background())
	if after.Messages != 2 || after.ConversationTokens < 200 || after.Free >= before.Free {
		t.Errorf("after a turn: %+v", after)
	}
	if est := agent.EstimateTokens(h.a.Messages()); est != after.ConversationTokens {
		t.Errorf("incremental estimate %d, measured %d", after.ConversationTokens, est)
	}
	if !strings.Contains(after.String(), "rules") {
		t.Errorf("String() = %q", after.String())
	}
}

func TestContextExactCount(t *testing.T) {
	m := &countingModel{Model: llmtest.NewModel(), n: 1234}
	a, err := agent.New(&agent.Options{Model: m, ModelName: "custom", ContextWindow: 10000, OutputReserve: 2000, Compaction: &agent.CompactionOptions{Threshold: 0.5}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := a.Context(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := &agent.ContextBreakdown{Model: "custom", Window: 10000, OutputReserve: 2000, Total: 1234, Exact: true, Free: 10000 - 2000 - 1234, CompactAt: 4000}
	if diff := cmp.Diff(want, b); diff != "" {
		t.Errorf("breakdown (-want +got):\n%s", diff)
	}
}

var soakSteps = flag.Int("soak", 500, "steps of the long-run soak (100 with -short)")

// A long tool loop in a 32k window with ~2 KB results never overflows:
// automatic compaction keeps every request under the window, and the log
// stays derivable and balanced.
func TestSoakLongToolLoop(t *testing.T) {
	steps := *soakSteps
	if testing.Short() && steps > 100 {
		steps = 100
	}
	l := &loopModel{limit: 32000 - 4096, steps: steps}
	h := newHarness(t, &agent.Options{
		Tools:         []tool.Tool{fetchTool(2048)},
		ContextWindow: 32000, OutputReserve: 4096,
		Compaction: &agent.CompactionOptions{KeepSteps: 4},
		Limits:     agent.Limits{MaxSteps: steps + 10},
	}, l.script(steps*2+50)...)
	res := h.run("fetch every page")
	if res.Text != "done" {
		t.Fatalf("text = %q (reason %s)", res.Text, res.Reason)
	}
	if l.overflows != 0 {
		t.Errorf("%d requests overflowed", l.overflows)
	}
	evs := h.events() // balanced
	comps := compactions(evs)
	if len(comps) == 0 {
		t.Fatal("no compaction in a long run")
	}
	checkCut(t, evs)
	var peak int64
	for _, s := range l.sizes {
		peak = max(peak, s)
	}
	// The log derives to what the agent sends, and every call is paired.
	derived := session.Derive(evs)
	if diff := cmp.Diff(len(h.a.Messages()), len(derived)); diff != "" {
		t.Errorf("derived length (-agent +log):\n%s", diff)
	}
	for i, m := range derived {
		if calls := m.ToolCalls(); len(calls) > 0 {
			if i+1 >= len(derived) || len(derived[i+1].Parts) < len(calls) {
				t.Fatalf("message %d: calls without results", i)
			}
		}
	}
	for _, rep := range ofType[*session.Repair](evs) {
		t.Errorf("repair %+v", rep)
	}
	t.Logf("%d steps, %d compactions, %d summary calls, peak request %d of %d tokens", steps, len(comps), l.summaries, peak, l.limit)
}
