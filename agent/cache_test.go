package agent_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/agent/cachewatch"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/provider/anthropic"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// cacheRun runs a tool loop of steps steps through the agent over the
// Anthropic wire against the fake provider's prompt cache and returns the
// usage of each loop step, with the steps that came right after a
// compaction (they write the new prefix) marked.
func cacheRun(t *testing.T, steps int, opts *agent.Options) (usages []llm.Usage, fresh []bool, events []cachewatch.Break, h *harness) {
	t.Helper()
	l := &loopModel{steps: steps - 1}
	script := llmtest.NewModel(l.script(steps*2 + 20)...)
	srv := llmtest.NewServerWithOptions(t, script, nil)
	model, err := anthropic.New(&anthropic.Options{BaseURL: srv.URL, APIKey: "test", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	opts.Model, opts.Provider, opts.ModelName = model, "anthropic", "claude-sonnet-4-5"
	opts.System = strings.Repeat("You are a careful software engineer working in a Go repository. ", 80)
	opts.Tools = []tool.Tool{fetchTool(1500)}
	opts.PromptCache = &llm.CacheHint{}
	opts.Limits.MaxSteps = steps + 5
	// Cache telemetry reaches hosts on the event bus.
	opts.Hooks = new(hook.Set).Observe("breaks", session.TypeCacheBreak, func(ev session.Event) {
		var b cachewatch.Break
		if err := json.Unmarshal(ev.Data.(*session.CacheBreak).Detail, &b); err != nil {
			t.Errorf("cache.break detail: %v", err)
		}
		events = append(events, b)
	})
	h = newHarness(t, opts)
	if res := h.run("fetch every page"); res.Text != "done" {
		t.Fatalf("text = %q (%s)", res.Text, res.Reason)
	}
	h.a.Close() // every event has reached the observer
	after := false
	for _, ev := range h.events() {
		switch p := ev.Data.(type) {
		case *session.Compaction:
			after = true
		case *session.AssistantMessage:
			usages = append(usages, p.Usage)
			fresh = append(fresh, after)
			after = false
		}
	}
	return usages, fresh, events, h
}

// ratio is the cache-read share of the cacheable prompt from step 2 on,
// leaving out the steps that wrote a new prefix after a compaction.
func ratio(usages []llm.Usage, fresh []bool) (float64, int64, int64) {
	var read, cacheable int64
	for i, u := range usages {
		if i == 0 || fresh[i] {
			continue
		}
		read += u.CacheRead
		cacheable += u.CacheRead + u.CacheWrite
	}
	return float64(read) / float64(max(cacheable, 1)), read, cacheable
}

func TestPromptCacheHundredStepLoop(t *testing.T) {
	usages, fresh, breaks, h := cacheRun(t, 100, &agent.Options{})
	if len(usages) != 100 || usages[0].CacheWrite == 0 {
		t.Fatalf("steps = %d, first usage %+v", len(usages), usages[0])
	}
	r, read, cacheable := ratio(usages, fresh)
	t.Logf("steps 2–100: cache read %d of %d cacheable tokens (%.2f%%)", read, cacheable, 100*r)
	if r < 0.95 {
		t.Errorf("cache-read ratio = %.4f, want ≥ 0.95", r)
	}
	if len(breaks) != 0 {
		t.Errorf("breaks: %+v", breaks)
	}
	if s := h.a.CacheStats(); s.Requests != 100 || s.Breaks != 0 {
		t.Errorf("stats = %+v", s)
	}
	if _, ok := h.a.CacheExpiresAt(); !ok {
		t.Error("no cache expiry after a cached run")
	}
	if imp := h.a.CacheImpact(cachewatch.Change{Dimension: cachewatch.DimSystem}); imp.Tokens <= 0 {
		t.Errorf("impact of a system change = %+v", imp)
	}
}

func TestPromptCacheAcrossAutoCompaction(t *testing.T) {
	usages, fresh, breaks, h := cacheRun(t, 100, &agent.Options{
		ContextWindow: 40000, OutputReserve: 4000,
		Compaction: &agent.CompactionOptions{KeepSteps: 3},
	})
	n := 0
	for _, f := range fresh {
		if f {
			n++
		}
	}
	if n == 0 {
		t.Fatal("no compaction happened")
	}
	r, read, cacheable := ratio(usages, fresh)
	t.Logf("%d compactions; steps 2–100 but the first after each compaction: cache read %d of %d cacheable tokens (%.2f%%); %d breaks reported", n, read, cacheable, 100*r, len(breaks))
	if r < 0.95 {
		t.Errorf("cache-read ratio = %.4f, want ≥ 0.95", r)
	}
	// A compaction rewrites the history: each shows as at most one break.
	if len(breaks) > n {
		t.Errorf("%d breaks for %d compactions: %+v", len(breaks), n, breaks)
	}
	// What the host was told is on the log too.
	logged := ofType[*session.CacheBreak](h.events())
	if len(logged) != len(breaks) {
		t.Fatalf("%d cache.break events on the log, %d reported", len(logged), len(breaks))
	}
	for i, b := range logged {
		if b.Rebilled != breaks[i].Rebilled || b.Cause != string(breaks[i].Cause) || len(b.Detail) == 0 {
			t.Errorf("cache.break %d = %+v, reported %+v", i, b, breaks[i])
		}
	}
	drifts := ofType[*session.CacheDrift](h.events())
	if len(drifts) < n {
		t.Errorf("%d cache.drift events for %d compactions", len(drifts), n)
	}
	for _, d := range drifts {
		if !slices.Contains(d.Changed, string(cachewatch.DimMessagePrefix)) {
			t.Errorf("a compaction's drift names %v, want messagePrefix", d.Changed)
		}
	}
}
