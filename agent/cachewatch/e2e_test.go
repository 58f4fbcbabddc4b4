package cachewatch_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/agent/cachewatch"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/provider/anthropic"
)

// sharedClock drives both the fake provider's cache and the watcher.
type sharedClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *sharedClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *sharedClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// loop is a tool loop over the Anthropic wire against the fake provider,
// growing one message list the way an agent does.
type loop struct {
	t     *testing.T
	clock *sharedClock
	model llm.Model
	w     *cachewatch.Watcher
	req   *llm.Request
	step  int
}

func newLoop(t *testing.T, script *llmtest.Model) *loop {
	clock := &sharedClock{t: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	srv := llmtest.NewServerWithOptions(t, script, &llmtest.ServerOptions{Now: clock.now})
	model, err := anthropic.New(&anthropic.Options{BaseURL: srv.URL, APIKey: "test", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return &loop{
		t: t, clock: clock, model: model,
		w: cachewatch.New(&cachewatch.Options{Now: clock.now, SectionNames: []string{"base", "project"}}),
		req: &llm.Request{
			Model: "claude-sonnet-4-5",
			System: []llm.Text{
				{Text: strings.Repeat("You are a careful software engineer working in a Go repository. ", 80)},
				{Text: "Project notes: the module is github.com/reinhq/rein; run go test before you answer."},
			},
			Tools: []llm.ToolSpec{
				{Name: "read", Description: "Read a file of the workspace.", Schema: []byte(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
				{Name: "grep", Description: "Search the workspace.", Schema: []byte(`{"type":"object","properties":{"pattern":{"type":"string"}},"required":["pattern"]}`)},
			},
			Messages: []llm.Message{llm.UserText("Find where the cache is configured and explain it.")},
			Cache:    &llm.CacheHint{}, // the adapter places the breakpoints
		},
	}
}

// next sends the request, then appends the answer and its tool results.
func (l *loop) next() (*cachewatch.Drift, *cachewatch.Break, llm.Usage) {
	l.t.Helper()
	l.step++
	l.clock.advance(2 * time.Second)
	d := l.w.Before(l.req)
	res, err := llm.Collect(l.model.Stream(context.Background(), l.req))
	if err != nil {
		l.t.Fatalf("step %d: %v", l.step, err)
	}
	b := l.w.After(res.Usage)
	l.req.Messages = append(l.req.Messages, res.Message)
	var results []llm.Part
	for _, c := range res.Message.ToolCalls() {
		out := fmt.Sprintf("%s of %s, step %d:\n%s", c.Name, c.Args, l.step, strings.Repeat("func f() { return }\n", 5+l.step%17))
		results = append(results, &llm.ToolResult{CallID: c.ID, Parts: []llm.Part{&llm.Text{Text: out}}})
	}
	if len(results) > 0 {
		l.req.Messages = append(l.req.Messages, llm.Message{Role: llm.RoleUser, Parts: results})
	}
	return d, b, res.Usage
}

func toolScript(n int) *llmtest.Model {
	m := llmtest.NewModel()
	for i := range n {
		m.Add(llmtest.CallTool(fmt.Sprintf("toolu_%03d", i), "read", fmt.Sprintf(`{"path":"internal/file%03d.go"}`, i)))
	}
	return m
}

func TestEndToEndHundredStepToolLoopKeepsTheCache(t *testing.T) {
	const steps = 100
	script := toolScript(steps - 1)
	script.Add(llmtest.Reply("The cache is configured in one place."))
	l := newLoop(t, script)

	var read, cacheable, prompt int64
	minRatio := 1.0
	for step := 1; step <= steps; step++ {
		d, b, u := l.next()
		if d != nil {
			t.Errorf("step %d: drift %v", step, d)
		}
		if b != nil {
			t.Errorf("step %d: break %v", step, b)
		}
		if step == 1 {
			if u.CacheWrite == 0 {
				t.Fatalf("step 1 wrote nothing to the cache: %+v", u)
			}
			continue
		}
		read += u.CacheRead
		cacheable += u.CacheRead + u.CacheWrite
		prompt += u.PromptTokens()
		minRatio = min(minRatio, float64(u.CacheRead)/float64(u.CacheRead+u.CacheWrite))
	}
	ratio := float64(read) / float64(cacheable)
	t.Logf("steps 2–%d: cache read %d of %d cacheable tokens (%.2f%%; %.2f%% of all %d prompt tokens); lowest step %.2f%%",
		steps, read, cacheable, 100*ratio, 100*float64(read)/float64(prompt), prompt, 100*minRatio)
	if ratio < 0.95 {
		t.Errorf("cache-read ratio from step 2 on = %.4f, want ≥ 0.95", ratio)
	}
	if s := l.w.Stats(); s.Requests != steps || s.Breaks != 0 || s.Drifts != 0 {
		t.Errorf("stats = %+v", s)
	}
}

func TestEndToEndBreaksOverTheWire(t *testing.T) {
	l := newLoop(t, toolScript(12))
	for range 3 {
		if d, b, _ := l.next(); d != nil || b != nil {
			t.Fatalf("warm-up: drift %v, break %v", d, b)
		}
	}

	// A tool-choice change drifts, but the fake provider's cache (like
	// many) ignores it: the healthy read absorbs the drift.
	l.req.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceRequired}
	d, b, _ := l.next()
	if d == nil || !d.Has(cachewatch.DimToolChoice) || b != nil {
		t.Fatalf("tool choice: drift %v, break %v; want an absorbed drift", d, b)
	}
	if got := l.w.Stats().Absorbed; got != 1 {
		t.Errorf("absorbed = %d, want 1", got)
	}

	// Editing the project section loses everything after the tools and
	// the first section.
	l.req.System = []llm.Text{l.req.System[0], {Text: l.req.System[1].Text + " Use Go 1.26."}}
	d, b, u := l.next()
	if d == nil || !d.Has(cachewatch.DimSystem) {
		t.Fatalf("system edit: drift %v", d)
	}
	if b == nil || b.Cause != cachewatch.CauseChange || !b.Has(cachewatch.DimSystem) ||
		len(b.Sections) != 1 || b.Sections[0] != (cachewatch.Section{Index: 1, Name: "project"}) {
		t.Fatalf("system edit: break %v, want one naming system section 1 (project)", b)
	}
	if b.Rebilled <= 0 || b.CacheRead != u.CacheRead {
		t.Errorf("system edit: break %+v", b)
	}

	// Rewriting an old message (say, eliding a tool result) diverges there.
	old := l.req.Messages
	l.req.Messages = append([]llm.Message(nil), old...)
	l.req.Messages[2] = llm.Message{Role: llm.RoleUser, Parts: []llm.Part{
		&llm.ToolResult{CallID: old[2].Parts[0].(*llm.ToolResult).CallID, Parts: []llm.Part{&llm.Text{Text: "[elided]"}}},
	}}
	d, b, _ = l.next()
	if d == nil || d.DivergedAt != 2 || b == nil || !b.Has(cachewatch.DimMessagePrefix) || b.DivergedAt != 2 {
		t.Fatalf("rewrite: drift %v, break %v; want messagePrefix at 2", d, b)
	}

	// Healthy again, then a pause longer than the cache's five minutes.
	if d, b, _ := l.next(); d != nil || b != nil {
		t.Fatalf("after the rewrite: drift %v, break %v", d, b)
	}
	if exp, ok := l.w.ExpiresAt(); !ok || !exp.Equal(l.clock.now().Add(5*time.Minute)) {
		t.Errorf("ExpiresAt = %v, %v; want five minutes after the last request", exp, ok)
	}
	l.clock.advance(6 * time.Minute)
	d, b, u = l.next()
	if d != nil || b == nil || b.Cause != cachewatch.CauseTTL || b.CacheRead != 0 || len(b.Changed) != 0 {
		t.Fatalf("after a pause: drift %v, break %v; want a TTL break with nothing changed", d, b)
	}
	if b.Rebilled == 0 || b.CacheWrite != u.CacheWrite {
		t.Errorf("after a pause: break %+v", b)
	}
}
