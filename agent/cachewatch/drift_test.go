package cachewatch_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/agent/cachewatch"
	"github.com/reinhq/rein/llm"
)

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
	w, req := primed(t, nil, 1)
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
			w, req := primed(t, nil, 10)
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
	w, req := primed(t, &cachewatch.Options{CheckAll: true}, 20)
	// An overwrite far from the tail of the shared slice: outside the
	// default contract, seen with CheckAll.
	req.Messages[2] = llm.UserText("rewritten in place")
	if d := w.Before(req); d == nil || d.DivergedAt != 2 {
		t.Errorf("drift = %v, want messagePrefix at 2", d)
	}
}

func TestHealthyReadAfterDriftIsAbsorbed(t *testing.T) {
	w, req := primed(t, nil, 10)
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
			w, req := primed(t, nil, 4)
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
	w, req := primed(t, nil, 4)
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
