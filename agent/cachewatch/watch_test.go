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

// primed is a watcher with opts (nil for none) that has seen
// baseRequest(n) and its response's cache write of 2,000 tokens.
func primed(t *testing.T, opts *cachewatch.Options, n int) (*cachewatch.Watcher, *llm.Request) {
	t.Helper()
	w := cachewatch.New(opts)
	req := baseRequest(n)
	prime(t, w, req, 2000)
	return w, req
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
			w, req := primed(t, tc.opts, 2)
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
	w, req := primed(t, nil, 3)
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
