package cachewatch_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/agent/cachewatch"
	"github.com/reinhq/rein/llm"
)

// clock is a settable test clock.
type clock struct{ t time.Time }

func newClock() *clock                   { return &clock{t: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)} }
func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func newWatcher(c *clock) *cachewatch.Watcher {
	return cachewatch.New(&cachewatch.Options{Now: c.now, SectionNames: []string{"base", "rules"}})
}

var schema = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)

func baseRequest(n int) *llm.Request {
	req := &llm.Request{
		Model:  "claude-sonnet-4-5",
		System: []llm.Text{{Text: "You are a careful engineer."}, {Text: "Rules: be brief."}},
		Tools: []llm.ToolSpec{
			{Name: "read", Description: "Read a file.", Schema: schema},
			{Name: "write", Description: "Write a file.", Schema: schema},
		},
	}
	for i := range n {
		req.Messages = append(req.Messages, message(i))
	}
	return req
}

// message returns the i-th message of a tool loop: user prompt, then
// assistant tool calls and user tool results alternating.
func message(i int) llm.Message {
	switch {
	case i == 0:
		return llm.UserText("Fix the bug.")
	case i%2 == 1:
		id := llm.CallID(fmt.Sprintf("call_%d", i))
		return llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{
			&llm.Text{Text: "Reading."},
			&llm.ToolCall{ID: id, Name: "read", Args: json.RawMessage(fmt.Sprintf(`{"path":"f%d.go"}`, i))},
		}}
	default:
		id := llm.CallID(fmt.Sprintf("call_%d", i-1))
		return llm.Message{Role: llm.RoleUser, Parts: []llm.Part{
			&llm.ToolResult{CallID: id, Parts: []llm.Part{&llm.Text{Text: strings.Repeat("x", 40+i)}}},
		}}
	}
}

func write(n int64) llm.Usage { return llm.Usage{Input: 3, CacheWrite: n, CacheWrite5m: n} }
func readWrite(r, w int64) llm.Usage {
	return llm.Usage{Input: 3, CacheRead: r, CacheWrite: w, CacheWrite5m: w}
}

// prime sends req as the first request and reports a cache write of n.
func prime(t *testing.T, w *cachewatch.Watcher, req *llm.Request, n int64) {
	t.Helper()
	if d := w.Before(req); d != nil {
		t.Fatalf("first request drifted: %v", d)
	}
	if b := w.After(write(n)); b != nil {
		t.Fatalf("first response broke: %v", b)
	}
}

func TestAppendIsNotABreak(t *testing.T) {
	for _, tc := range []struct {
		name string
		next func(prev *llm.Request) *llm.Request
	}{
		{"append to the shared slice", func(prev *llm.Request) *llm.Request {
			req := *prev
			req.Messages = append(req.Messages, message(len(prev.Messages)), message(len(prev.Messages)+1))
			return &req
		}},
		{"append to a copied slice", func(prev *llm.Request) *llm.Request {
			req := *prev
			req.Messages = append(slices.Clone(prev.Messages), message(len(prev.Messages)), message(len(prev.Messages)+1))
			return &req
		}},
		{"deep copy plus append", func(prev *llm.Request) *llm.Request {
			req := prev.Clone()
			req.Messages = append(req.Messages, message(len(prev.Messages)), message(len(prev.Messages)+1))
			return req
		}},
		{"same request again", func(prev *llm.Request) *llm.Request { return prev }},
		{"cache hints moved", func(prev *llm.Request) *llm.Request {
			req := prev.Clone()
			req.Messages[len(req.Messages)-1].Parts[0].(*llm.ToolResult).Cache = &llm.CacheHint{}
			req.System[1].Cache = &llm.CacheHint{TTL: time.Hour}
			req.Tools[1].Cache = &llm.CacheHint{}
			return req
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			w := newWatcher(c)
			req := baseRequest(5)
			req.Messages = slices.Grow(req.Messages, 20) // room to append in place
			prime(t, w, req, 1000)
			for step := range 5 {
				c.advance(10 * time.Second)
				req = tc.next(req)
				if d := w.Before(req); d != nil {
					t.Fatalf("step %d: unexpected drift: %v", step, d)
				}
				if b := w.After(readWrite(1000+int64(step)*50, 50)); b != nil {
					t.Fatalf("step %d: unexpected break: %v", step, b)
				}
			}
			if got := w.Stats(); got.Drifts != 0 || got.Breaks != 0 {
				t.Errorf("stats = %+v, want no drifts or breaks", got)
			}
		})
	}
}

func TestSystemEditNamesTheSection(t *testing.T) {
	c := newClock()
	w := newWatcher(c)
	req := baseRequest(3)
	prime(t, w, req, 2000)

	next := *req
	next.System = []llm.Text{req.System[0], {Text: "Rules: be brief. Today is Tuesday."}}
	next.Messages = append(slices.Clone(req.Messages), message(3))
	d := w.Before(&next)
	wantDiff := cachewatch.Diff{
		Changed:    []cachewatch.Dimension{cachewatch.DimSystem},
		Details:    map[cachewatch.Dimension]string{cachewatch.DimSystem: "section 1 rules changed (16 → 34 bytes)"},
		Sections:   []cachewatch.Section{{Index: 1, Name: "rules"}},
		DivergedAt: -1,
	}
	want := &cachewatch.Drift{Step: 2, Model: "claude-sonnet-4-5", Diff: wantDiff, Messages: 4, PreviousMessages: 3}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Fatalf("drift (-want +got):\n%s", diff)
	}
	// Only the tools and the first section are read back.
	b := w.After(readWrite(300, 1800))
	wantBreak := &cachewatch.Break{
		Step: 2, Model: "claude-sonnet-4-5", Cause: cachewatch.CauseChange, Diff: wantDiff,
		CacheRead: 300, CacheWrite: 1800, Expected: 1600, Rebilled: 1700,
		Pause: time.Duration(0), TTL: 5 * time.Minute,
	}
	if diff := cmp.Diff(wantBreak, b); diff != "" {
		t.Fatalf("break (-want +got):\n%s", diff)
	}
}

func TestSystemSectionsAddedAndRemoved(t *testing.T) {
	w := cachewatch.New(nil)
	req := baseRequest(1)
	prime(t, w, req, 2000)
	next := *req
	next.System = append(slices.Clone(req.System), llm.Text{Text: "Skills: none."})
	d := w.Before(&next)
	if d == nil || !d.Has(cachewatch.DimSystem) {
		t.Fatalf("drift = %v, want system", d)
	}
	if diff := cmp.Diff([]cachewatch.Section{{Index: 2}}, d.Sections); diff != "" {
		t.Errorf("sections (-want +got):\n%s", diff)
	}
	w.After(readWrite(2000, 10))
	d = w.Before(req)
	if d == nil || d.Details[cachewatch.DimSystem] != "section 2 removed (13 bytes)" {
		t.Errorf("drift = %v, want section 2 removed", d)
	}
}

func TestRewriteNamesMessagePrefix(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rewrite func(req *llm.Request) *llm.Request
		want    int
		detail  string
	}{
		{"new slice with message 3 replaced", func(req *llm.Request) *llm.Request {
			next := *req
			next.Messages = slices.Clone(req.Messages)
			next.Messages[3] = llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{&llm.Text{Text: "[elided]"}}}
			next.Messages = append(next.Messages, message(len(req.Messages)))
			return &next
		}, 3, "message 3 (assistant) of 10 rewritten; now 11 messages"},
		{"deep copy with a part of message 3 edited", func(req *llm.Request) *llm.Request {
			next := req.Clone()
			next.Messages[3].Parts[0].(*llm.Text).Text = "Reading carefully."
			return next
		}, 3, "message 3 (assistant) of 10 rewritten"},
		{"newest message rewritten in the shared slice", func(req *llm.Request) *llm.Request {
			// A loop that derives history fills the newest user message
			// in place.
			req.Messages[9] = llm.Message{Role: llm.RoleUser, Parts: []llm.Part{&llm.Text{Text: "steer"}}}
			return req
		}, 9, "message 9 (user) of 10 rewritten"},
		{"history cut", func(req *llm.Request) *llm.Request {
			next := *req
			next.Messages = req.Messages[:4]
			return &next
		}, 4, "history cut from 10 to 4 messages"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := cachewatch.New(nil)
			req := baseRequest(10)
			prime(t, w, req, 2000)
			d := w.Before(tc.rewrite(req))
			if d == nil {
				t.Fatal("no drift")
			}
			if diff := cmp.Diff([]cachewatch.Dimension{cachewatch.DimMessagePrefix}, d.Changed); diff != "" {
				t.Errorf("changed (-want +got):\n%s", diff)
			}
			if d.DivergedAt != tc.want {
				t.Errorf("diverged at %d, want %d", d.DivergedAt, tc.want)
			}
			if got := d.Details[cachewatch.DimMessagePrefix]; got != tc.detail {
				t.Errorf("detail = %q, want %q", got, tc.detail)
			}
		})
	}
}

func TestCheckAllSeesOldMessagesOverwrittenInPlace(t *testing.T) {
	w := cachewatch.New(&cachewatch.Options{CheckAll: true})
	req := baseRequest(20)
	prime(t, w, req, 2000)
	// An overwrite far from the tail of the shared slice: outside the
	// default contract, seen with CheckAll.
	req.Messages[2] = llm.UserText("rewritten in place")
	if d := w.Before(req); d == nil || d.DivergedAt != 2 {
		t.Errorf("drift = %v, want messagePrefix at 2", d)
	}
}

func TestHealthyReadAfterDriftIsAbsorbed(t *testing.T) {
	w := cachewatch.New(nil)
	req := baseRequest(10)
	prime(t, w, req, 2000)
	next := *req
	next.ToolChoice = llm.ToolChoice{Mode: llm.ToolChoiceRequired}
	d := w.Before(&next)
	if d == nil || d.Details[cachewatch.DimToolChoice] != "auto → required" {
		t.Fatalf("drift = %v, want toolChoice auto → required", d)
	}
	if b := w.After(readWrite(1700, 300)); b != nil {
		t.Fatalf("healthy read reported as a break: %v", b)
	}
	got := w.Stats()
	want := cachewatch.Stats{Requests: 2, Drifts: 1, Absorbed: 1, Input: 6, CacheRead: 1700, CacheWrite: 2300}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

func TestUnchangedCollapsedReadCause(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  cachewatch.Options
		hint  *llm.CacheHint
		pause time.Duration
		want  cachewatch.Cause
		ttl   time.Duration
	}{
		{"pause longer than the default TTL", cachewatch.Options{}, nil, 6 * time.Minute, cachewatch.CauseTTL, 5 * time.Minute},
		{"pause within the default TTL", cachewatch.Options{}, nil, 4 * time.Minute, cachewatch.CauseEviction, 5 * time.Minute},
		{"one-hour hint, 6 minute pause", cachewatch.Options{}, &llm.CacheHint{TTL: time.Hour}, 6 * time.Minute, cachewatch.CauseEviction, time.Hour},
		{"one-hour hint, 2 hour pause", cachewatch.Options{}, &llm.CacheHint{TTL: time.Hour}, 2 * time.Hour, cachewatch.CauseTTL, time.Hour},
		{"explicit TTL", cachewatch.Options{TTL: time.Minute}, nil, 90 * time.Second, cachewatch.CauseTTL, time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClock()
			opts := tc.opts
			opts.Now = c.now
			w := cachewatch.New(&opts)
			req := baseRequest(4)
			req.Cache = tc.hint
			prime(t, w, req, 2000)
			c.advance(tc.pause)
			if d := w.Before(req); d != nil {
				t.Fatalf("unchanged request drifted: %v", d)
			}
			b := w.After(readWrite(0, 2000))
			want := &cachewatch.Break{
				Step: 2, Model: req.Model, Cause: tc.want, Diff: cachewatch.Diff{DivergedAt: -1},
				CacheRead: 0, CacheWrite: 2000, Expected: 1600, Rebilled: 2000, Pause: tc.pause, TTL: tc.ttl,
			}
			if diff := cmp.Diff(want, b); diff != "" {
				t.Errorf("break (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDimensionChanges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(r *llm.Request)
		want   cachewatch.Dimension
		detail string
	}{
		{"tool added", func(r *llm.Request) {
			r.Tools = append(slices.Clone(r.Tools), llm.ToolSpec{Name: "grep", Schema: schema})
		}, cachewatch.DimTools, "2 → 3 tools; added grep"},
		{"tool removed", func(r *llm.Request) { r.Tools = r.Tools[:1] }, cachewatch.DimTools, "2 → 1 tools; removed write"},
		{"tool description changed", func(r *llm.Request) {
			r.Tools = slices.Clone(r.Tools)
			r.Tools[0].Description = "Read a file from the workspace."
		}, cachewatch.DimTools, "2 → 2 tools; changed read"},
		{"tool schema changed", func(r *llm.Request) {
			r.Tools = slices.Clone(r.Tools)
			r.Tools[1].Schema = json.RawMessage(`{"type":"object"}`)
		}, cachewatch.DimTools, "2 → 2 tools; changed write"},
		{"tools reordered", func(r *llm.Request) {
			r.Tools = []llm.ToolSpec{r.Tools[1], r.Tools[0]}
		}, cachewatch.DimTools, "2 → 2 tools; reordered"},
		{"model", func(r *llm.Request) { r.Model = "claude-opus-4-1" }, cachewatch.DimModel, `"claude-sonnet-4-5" → "claude-opus-4-1"`},
		{"thinking on", func(r *llm.Request) { r.Reasoning = &llm.ReasoningOptions{BudgetTokens: 2048} }, cachewatch.DimReasoning, "off → budget 2048"},
		{"parallel calls off", func(r *llm.Request) { f := false; r.ParallelToolCalls = &f }, cachewatch.DimToolChoice, "auto → auto, no parallel calls"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := cachewatch.New(nil)
			req := baseRequest(4)
			prime(t, w, req, 2000)
			next := *req
			tc.change(&next)
			d := w.Before(&next)
			if d == nil {
				t.Fatal("no drift")
			}
			if diff := cmp.Diff([]cachewatch.Dimension{tc.want}, d.Changed); diff != "" {
				t.Errorf("changed (-want +got):\n%s", diff)
			}
			if got := d.Details[tc.want]; got != tc.detail {
				t.Errorf("detail = %q, want %q", got, tc.detail)
			}
			b := w.After(readWrite(0, 2000))
			if b == nil || b.Cause != cachewatch.CauseChange || !b.Has(tc.want) {
				t.Errorf("break = %v, want one caused by %s", b, tc.want)
			}
		})
	}
}

func TestChangesCarryOverAFailedRequest(t *testing.T) {
	w := cachewatch.New(nil)
	req := baseRequest(4)
	prime(t, w, req, 2000)
	next := *req
	next.Model = "claude-opus-4-1"
	if d := w.Before(&next); d == nil {
		t.Fatal("no drift")
	}
	// The request failed before any response; the loop sends it again.
	if b := w.After(llm.Usage{}); b != nil {
		t.Fatalf("a usage with no prompt tokens was judged: %v", b)
	}
	if d := w.Before(&next); d != nil {
		t.Fatalf("the same request again drifted: %v", d)
	}
	b := w.After(readWrite(0, 2000))
	if b == nil || !b.Has(cachewatch.DimModel) || b.Cause != cachewatch.CauseChange {
		t.Fatalf("break = %v, want the model change carried over", b)
	}
}

func TestFloorAndRatio(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  *cachewatch.Options
		read  int64
		broke bool
	}{
		{"default ratio, just enough", nil, 1600, false},
		{"default ratio, just short", nil, 1599, true},
		{"ratio off, partial read", &cachewatch.Options{Ratio: -1}, 1, false},
		{"ratio off, nothing read", &cachewatch.Options{Ratio: -1}, 0, true},
		{"floor above ratio", &cachewatch.Options{Floor: 1900}, 1800, true},
		{"stricter ratio", &cachewatch.Options{Ratio: 0.95}, 1800, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := cachewatch.New(tc.opts)
			req := baseRequest(2)
			prime(t, w, req, 2000)
			w.Before(req)
			if b := w.After(readWrite(tc.read, 0)); (b != nil) != tc.broke {
				t.Errorf("break = %v, want broke=%v", b, tc.broke)
			}
		})
	}
}

func TestNothingCachedBeforeIsNoBreak(t *testing.T) {
	w := cachewatch.New(nil)
	req := baseRequest(2)
	w.Before(req)
	w.After(llm.Usage{Input: 500}) // below the provider's minimum: nothing cached
	w.Before(req)
	if b := w.After(llm.Usage{Input: 520}); b != nil {
		t.Errorf("break with nothing to lose: %v", b)
	}
}

func TestExpiresAt(t *testing.T) {
	c := newClock()
	w := newWatcher(c)
	if _, ok := w.ExpiresAt(); ok {
		t.Fatal("ExpiresAt known before any request")
	}
	req := baseRequest(2)
	start := c.now()
	prime(t, w, req, 2000)
	if got, ok := w.ExpiresAt(); !ok || !got.Equal(start.Add(5*time.Minute)) {
		t.Errorf("ExpiresAt = %v, %v; want %v", got, ok, start.Add(5*time.Minute))
	}
	// A read refreshes the entry, with the TTL the request asked for.
	c.advance(3 * time.Minute)
	next := *req
	next.Cache = &llm.CacheHint{TTL: time.Hour}
	w.Before(&next)
	w.After(readWrite(2000, 0))
	if got, _ := w.ExpiresAt(); !got.Equal(c.now().Add(time.Hour)) {
		t.Errorf("ExpiresAt = %v, want %v", got, c.now().Add(time.Hour))
	}
	// A response that wrote only one-hour entries implies an hour.
	w2 := newWatcher(c)
	w2.Before(req)
	w2.After(llm.Usage{CacheWrite: 2000, CacheWrite1h: 2000})
	if got, _ := w2.ExpiresAt(); !got.Equal(c.now().Add(time.Hour)) {
		t.Errorf("ExpiresAt after a 1h write = %v, want %v", got, c.now().Add(time.Hour))
	}
}

func TestImpact(t *testing.T) {
	c := newClock()
	w := newWatcher(c)
	if got := w.Impact(cachewatch.Change{Dimension: cachewatch.DimTools}); got != (cachewatch.Impact{}) {
		t.Fatalf("Impact before any request = %+v, want zero", got)
	}
	req := baseRequest(6)
	// Content bytes, as the watcher counts them.
	var tools, sys int
	for _, tl := range req.Tools {
		tools += len(tl.Name) + len(tl.Description) + len(tl.Schema)
	}
	sys0, sys1 := len(req.System[0].Text), len(req.System[1].Text)
	sys = sys0 + sys1
	var msgSizes []int
	for _, m := range req.Messages {
		n := len(m.Role)
		for _, p := range m.Parts {
			switch p := p.(type) {
			case *llm.Text:
				n += len(p.Text)
			case *llm.ToolCall:
				n += len(p.ID) + len(p.Name) + len(p.Args)
			case *llm.ToolResult:
				n += len(p.CallID) + len(p.Parts[0].(*llm.Text).Text)
			}
		}
		msgSizes = append(msgSizes, n)
	}
	total := tools + sys
	for _, n := range msgSizes {
		total += n
	}
	// One token per byte, everything cached but the last 100 tokens.
	w.Before(req)
	w.After(llm.Usage{Input: 100, CacheWrite: int64(total - 100)})
	cached := int64(total - 100)

	for _, tc := range []struct {
		change cachewatch.Change
		want   int64
	}{
		{cachewatch.Change{Dimension: cachewatch.DimModel}, cached},
		{cachewatch.Change{Dimension: cachewatch.DimTools}, cached},
		{cachewatch.Change{Dimension: cachewatch.DimSystem, Index: 1}, cached - int64(tools+sys0)},
		{cachewatch.Change{Dimension: cachewatch.DimReasoning}, cached - int64(tools+sys)},
		{cachewatch.Change{Dimension: cachewatch.DimMessagePrefix, Index: 3}, cached - int64(tools+sys+msgSizes[0]+msgSizes[1]+msgSizes[2])},
		{cachewatch.Change{Dimension: cachewatch.DimMessagePrefix, Index: 6}, 0},
	} {
		got := w.Impact(tc.change)
		if want := (cachewatch.Impact{Tokens: tc.want, Cached: cached}); got != want {
			t.Errorf("Impact(%+v) = %+v, want %+v", tc.change, got, want)
		}
	}
	c.advance(5 * time.Minute)
	if got := w.Impact(cachewatch.Change{Dimension: cachewatch.DimTools}); got != (cachewatch.Impact{Expired: true}) {
		t.Errorf("Impact after the TTL = %+v, want expired", got)
	}
}

func TestJSON(t *testing.T) {
	b := &cachewatch.Break{
		Step: 7, Model: "m", Cause: cachewatch.CauseChange,
		Diff: cachewatch.Diff{
			Changed:    []cachewatch.Dimension{cachewatch.DimSystem, cachewatch.DimMessagePrefix},
			Details:    map[cachewatch.Dimension]string{cachewatch.DimSystem: "section 0 changed (1 → 2 bytes)"},
			Sections:   []cachewatch.Section{{Index: 0, Name: "base"}},
			DivergedAt: 3,
		},
		CacheRead: 10, CacheWrite: 2000, Expected: 1600, Rebilled: 1990, Pause: time.Second, TTL: 5 * time.Minute,
	}
	got, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"step":7,"model":"m","cause":"change","changed":["system","messagePrefix"],"details":{"system":"section 0 changed (1 → 2 bytes)"},"sections":[{"index":0,"name":"base"}],"diverged_at":3,"cache_read":10,"cache_write":2000,"expected":1600,"rebilled":1990,"pause":1000000000,"ttl":300000000000}`
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("JSON (-want +got):\n%s", diff)
	}
	wantStr := "cache break at step 7: read 10 tokens, expected at least 1600; 1990 tokens billed again; cause change: system (section 0 changed (1 → 2 bytes)); messagePrefix"
	if got := b.String(); got != wantStr {
		t.Errorf("String() = %q\nwant       %q", got, wantStr)
	}
}

func TestReset(t *testing.T) {
	w := cachewatch.New(nil)
	req := baseRequest(3)
	prime(t, w, req, 2000)
	w.Reset()
	next := *req
	next.Model = "other"
	if d := w.Before(&next); d != nil {
		t.Errorf("first request after Reset drifted: %v", d)
	}
	if got := w.Stats(); got.Requests != 1 {
		t.Errorf("stats after Reset = %+v, want one request", got)
	}
}

func TestConcurrentReaders(t *testing.T) {
	w := cachewatch.New(nil)
	req := baseRequest(2)
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
				w.ExpiresAt()
				w.Impact(cachewatch.Change{Dimension: cachewatch.DimSystem, Index: 1})
				w.Stats()
			}
		}
	}()
	for i := range 200 {
		req.Messages = append(req.Messages, message(len(req.Messages)))
		w.Before(req)
		w.After(readWrite(int64(1000+i), 10))
	}
	close(done)
	wg.Wait()
	if got := w.Stats(); got.Requests != 200 || got.Breaks != 0 {
		t.Errorf("stats = %+v", got)
	}
}

func TestAppendStepAllocatesNothing(t *testing.T) {
	w := cachewatch.New(nil)
	req := baseRequest(1000)
	req.Messages = slices.Grow(req.Messages, 1000)
	prime(t, w, req, 5000)
	call, result := message(1), message(2)
	cached := int64(5000)
	allocs := testing.AllocsPerRun(200, func() {
		req.Messages = append(req.Messages, call, result)
		w.Before(req)
		w.After(readWrite(cached, 100))
		cached += 100
	})
	if allocs != 0 {
		t.Errorf("an append-only step allocates %v times, want 0", allocs)
	}
}
