package llmtest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
)

// RunModelTests is the conformance suite of the llm.Model contract. Every
// implementation runs it: newModel receives a fresh scripted Model for each
// subtest and returns the Model under test — m itself for the scripted
// model, or an adapter pointed at NewServer(t, m) for a provider adapter:
//
//	func TestConformance(t *testing.T) {
//		llmtest.RunModelTests(t, func(t *testing.T, m *llmtest.Model) llm.Model {
//			srv := llmtest.NewServer(t, m)
//			return anthropic.New(&anthropic.Options{BaseURL: srv.URL, APIKey: "test"})
//		})
//	}
//
// It checks that: nothing is sent until the caller ranges; chunks arrive
// in order (usage before finish, finish last and once); concurrent
// streams do not cross; text, tool calls
// (also two in parallel and after text) and usage assemble to what was
// scripted; the request is not modified; breaking early releases the
// stream (through the server: the response body is closed); a cancelled
// context ends a hanging stream within a second with an error wrapping the
// context's; an error is the last value; a provider error keeps its kind
// and retry-after; an error after HTTP 200 is a *llm.ProviderError.
func RunModelTests(t *testing.T, newModel func(t *testing.T, m *Model) llm.Model) {
	t.Helper()
	run := func(name string, f func(t *testing.T, m *Model, model llm.Model)) {
		t.Run(name, func(t *testing.T) {
			m := NewModel()
			model := newModel(t, m)
			if model == nil {
				t.Fatal("newModel returned nil")
			}
			f(t, m, model)
		})
	}

	run("NoRequestUntilRanged", func(t *testing.T, m *Model, model llm.Model) {
		m.Add(Reply("hello"))
		_ = model.Stream(t.Context(), conformanceRequest())
		time.Sleep(20 * time.Millisecond)
		if n := m.Calls(); n != 0 {
			t.Errorf("the model received %d requests before the stream was ranged over, want 0", n)
		}
	})

	run("TextReply", func(t *testing.T, m *Model, model llm.Model) {
		m.Add(Reply("Hello, world."))
		res := collectChecked(t, model, conformanceRequest())
		if got := res.Message.Text(); got != "Hello, world." {
			t.Errorf("text = %q, want %q", got, "Hello, world.")
		}
		if res.Finish != llm.FinishStop {
			t.Errorf("finish = %q, want %q", res.Finish, llm.FinishStop)
		}
		if res.Message.Role != llm.RoleAssistant {
			t.Errorf("role = %q, want assistant", res.Message.Role)
		}
		if res.Usage.Output == 0 || res.Usage.PromptTokens() == 0 {
			t.Errorf("usage = %+v, want non-zero input and output", res.Usage)
		}
	})

	run("Usage", func(t *testing.T, m *Model, model llm.Model) {
		want := llm.Usage{Input: 1200, Output: 345, CacheRead: 800}
		m.Add(Reply("ok").WithUsage(want))
		res := collectChecked(t, model, conformanceRequest())
		got := res.Usage
		if got.Input != want.Input || got.Output != want.Output || got.CacheRead != want.CacheRead {
			t.Errorf("usage = %+v, want input %d, output %d, cache read %d", got, want.Input, want.Output, want.CacheRead)
		}
	})

	run("MaxTokens", func(t *testing.T, m *Model, model llm.Model) {
		m.Add(Chunks(
			&llm.BlockStart{Index: 0, Kind: llm.BlockText},
			&llm.TextDelta{Index: 0, Text: "This answer is cut"},
			&llm.BlockEnd{Index: 0},
			&llm.UsageChunk{Usage: llm.Usage{Input: 10, Output: 4}},
			&llm.Finish{Reason: llm.FinishMaxTokens},
		))
		res := collectChecked(t, model, conformanceRequest())
		if res.Finish != llm.FinishMaxTokens {
			t.Errorf("finish = %q, want %q", res.Finish, llm.FinishMaxTokens)
		}
		if got := res.Message.Text(); got != "This answer is cut" {
			t.Errorf("text = %q", got)
		}
	})

	run("ToolCall", func(t *testing.T, m *Model, model llm.Model) {
		m.Add(CallTool("call_1", "get_weather", `{"city":"Paris"}`))
		res := collectChecked(t, model, conformanceRequest())
		checkCalls(t, res, []llm.ToolCall{{ID: "call_1", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)}})
		if res.Finish != llm.FinishToolCalls {
			t.Errorf("finish = %q, want %q", res.Finish, llm.FinishToolCalls)
		}
	})

	run("ParallelToolCalls", func(t *testing.T, m *Model, model llm.Model) {
		calls := []llm.ToolCall{
			{ID: "call_a", Name: "get_weather", Args: json.RawMessage(`{"city":"Paris"}`)},
			{ID: "call_b", Name: "get_time", Args: json.RawMessage(`{"zone":"Europe/Paris","format":"24h"}`)},
		}
		m.Add(CallTools(calls...))
		res := collectChecked(t, model, conformanceRequest())
		checkCalls(t, res, calls)
	})

	run("TextThenToolCall", func(t *testing.T, m *Model, model llm.Model) {
		m.Add(Chunks(
			&llm.BlockStart{Index: 0, Kind: llm.BlockText},
			&llm.TextDelta{Index: 0, Text: "Let me "},
			&llm.TextDelta{Index: 0, Text: "check."},
			&llm.BlockEnd{Index: 0},
			&llm.BlockStart{Index: 1, Kind: llm.BlockToolCall, ID: "call_x", Name: "search"},
			&llm.ToolCallDelta{Index: 1, Args: `{"query":`},
			&llm.ToolCallDelta{Index: 1, Args: `"rein"}`},
			&llm.BlockEnd{Index: 1},
			&llm.UsageChunk{Usage: DefaultUsage},
			&llm.Finish{Reason: llm.FinishToolCalls},
		))
		res := collectChecked(t, model, conformanceRequest())
		if got := res.Message.Text(); got != "Let me check." {
			t.Errorf("text = %q, want %q", got, "Let me check.")
		}
		if len(res.Message.Parts) == 0 {
			t.Fatal("no parts")
		}
		if _, ok := res.Message.Parts[0].(*llm.Text); !ok {
			t.Errorf("first part is %T, want the text before the call", res.Message.Parts[0])
		}
		checkCalls(t, res, []llm.ToolCall{{ID: "call_x", Name: "search", Args: json.RawMessage(`{"query":"rein"}`)}})
	})

	run("RequestReachesModelUnmodified", func(t *testing.T, m *Model, model llm.Model) {
		m.Add(Reply("ok"))
		req := conformanceRequest()
		req.System = []llm.Text{{Text: "You are terse."}}
		req.Tools = []llm.ToolSpec{{Name: "search", Description: "Search the web.", Schema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)}}
		before := req.Clone()
		collectChecked(t, model, req)
		if !reflect.DeepEqual(before, req) {
			t.Errorf("Stream modified the request:\nbefore %+v\nafter  %+v", before, req)
		}
		reqs := m.Requests()
		if len(reqs) != 1 {
			t.Fatalf("the model received %d requests, want 1", len(reqs))
		}
		got := reqs[0]
		if got.Model != req.Model {
			t.Errorf("model = %q, want %q", got.Model, req.Model)
		}
		var sys string
		for _, s := range got.System {
			sys += s.Text
		}
		if sys != "You are terse." {
			t.Errorf("system = %q, want %q", sys, "You are terse.")
		}
		if len(got.Tools) != 1 || got.Tools[0].Name != "search" {
			t.Errorf("tools = %+v, want one named search", got.Tools)
		}
		if n := len(got.Messages); n == 0 || got.Messages[n-1].Text() != "What is rein?" {
			t.Errorf("messages = %+v, want the user's question last", got.Messages)
		}
	})

	run("ConcurrentStreams", func(t *testing.T, m *Model, model llm.Model) {
		const n = 4
		for range n {
			m.Add(Respond(func(req *llm.Request) Entry {
				return Reply("echo: " + req.Messages[len(req.Messages)-1].Text())
			}))
		}
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				req := conformanceRequest()
				q := fmt.Sprintf("question %d", i)
				req.Messages = []llm.Message{llm.UserText(q)}
				res, err := llm.Collect(model.Stream(t.Context(), req))
				if err != nil {
					t.Errorf("stream %d: %v", i, err)
					return
				}
				if got := res.Message.Text(); got != "echo: "+q {
					t.Errorf("stream %d got %q, want %q: concurrent streams crossed", i, got, "echo: "+q)
				}
			})
		}
		wg.Wait()
	})

	run("EarlyBreakReleasesStream", func(t *testing.T, m *Model, model llm.Model) {
		m.Add(HangAfter(
			&llm.BlockStart{Index: 0, Kind: llm.BlockText},
			&llm.TextDelta{Index: 0, Text: "first"},
		))
		ctx := t.Context() // never cancelled before the check: the break alone must release
		n := 0
		for c, err := range model.Stream(ctx, conformanceRequest()) {
			if err != nil {
				t.Fatalf("unexpected error before break: %v", err)
			}
			if _, ok := c.(*llm.TextDelta); ok {
				n++
				break
			}
		}
		if n != 1 {
			t.Fatal("no text delta arrived")
		}
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := m.waitIdle(wctx); err != nil {
			t.Errorf("the stream was not released within 2s of breaking out of the loop (for an HTTP adapter: close the response body)")
		}
	})

	for _, tc := range []struct {
		name  string
		entry Entry
	}{
		{"CancelBeforeFirstChunk", Hang()},
		{"CancelMidStream", HangAfter(&llm.BlockStart{Index: 0, Kind: llm.BlockText}, &llm.TextDelta{Index: 0, Text: "partial"})},
	} {
		run(tc.name, func(t *testing.T, m *Model, model llm.Model) {
			m.Add(tc.entry)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			time.AfterFunc(50*time.Millisecond, cancel)
			start := time.Now()
			var errs []error
			after := 0
			for _, err := range model.Stream(ctx, conformanceRequest()) {
				if err != nil {
					errs = append(errs, err)
				} else if len(errs) > 0 {
					after++
				}
				if time.Since(start) > 5*time.Second {
					t.Fatal("the stream did not end within 5s of cancelling its context")
				}
			}
			if d := time.Since(start); d > time.Second+50*time.Millisecond {
				t.Errorf("the stream ended %v after start, want under 1s after cancel", d)
			}
			if len(errs) != 1 {
				t.Fatalf("got %d errors, want exactly one: %v", len(errs), errs)
			}
			if !errors.Is(errs[0], context.Canceled) {
				t.Errorf("error %q does not wrap context.Canceled", errs[0])
			}
			if after > 0 {
				t.Errorf("%d chunks after the error; an error must be the last value", after)
			}
		})
	}

	for _, tc := range []struct {
		name  string
		err   *llm.ProviderError
		retry bool
	}{
		{"RateLimited", &llm.ProviderError{Kind: llm.ErrRateLimited, StatusCode: 429, RetryAfter: 2 * time.Second, Message: "rate limited"}, true},
		{"Overloaded", &llm.ProviderError{Kind: llm.ErrOverloaded, StatusCode: 529, RetryAfter: time.Second, Message: "overloaded"}, true},
		{"Server", &llm.ProviderError{Kind: llm.ErrServer, StatusCode: 500, Message: "internal error"}, false},
		{"Auth", &llm.ProviderError{Kind: llm.ErrAuth, StatusCode: 401, Message: "invalid api key"}, false},
		{"Quota", &llm.ProviderError{Kind: llm.ErrQuota, Message: "out of credit"}, false},
		{"ContextTooLong", &llm.ProviderError{Kind: llm.ErrContextTooLong, StatusCode: 400, Message: "prompt is too long"}, false},
		{"Invalid", &llm.ProviderError{Kind: llm.ErrInvalidRequest, StatusCode: 400, Message: "messages: field required"}, false},
	} {
		run("ProviderError/"+tc.name, func(t *testing.T, m *Model, model llm.Model) {
			m.Add(Fail(tc.err))
			chunks, errs := drainAll(t.Context(), model, conformanceRequest())
			if len(chunks) != 0 {
				t.Errorf("got %d chunks before a failed request's error, want none", len(chunks))
			}
			if len(errs) != 1 {
				t.Fatalf("got %d errors, want exactly one: %v", len(errs), errs)
			}
			var pe *llm.ProviderError
			if !errors.As(errs[0], &pe) {
				t.Fatalf("error %q (%T) is not a *llm.ProviderError", errs[0], errs[0])
			}
			if pe.Kind != tc.err.Kind {
				t.Errorf("kind = %q, want %q (error: %v)", pe.Kind, tc.err.Kind, pe)
			}
			if tc.retry && pe.RetryAfter != tc.err.RetryAfter {
				t.Errorf("retry-after = %v, want %v", pe.RetryAfter, tc.err.RetryAfter)
			}
		})
	}

	run("ErrorAfterChunksIsTerminal", func(t *testing.T, m *Model, model llm.Model) {
		m.Add(FailAfter(&llm.ProviderError{Kind: llm.ErrOverloaded, Message: "Overloaded"},
			&llm.BlockStart{Index: 0, Kind: llm.BlockText},
			&llm.TextDelta{Index: 0, Text: "half an ans"},
		))
		var text bytes.Buffer
		var errs []error
		after := 0
		for c, err := range model.Stream(t.Context(), conformanceRequest()) {
			switch {
			case err != nil:
				errs = append(errs, err)
			case len(errs) > 0:
				after++
			default:
				if d, ok := c.(*llm.TextDelta); ok {
					text.WriteString(d.Text)
				}
				if _, ok := c.(*llm.Finish); ok {
					t.Error("a Finish arrived in a stream that failed")
				}
			}
		}
		if text.String() != "half an ans" {
			t.Errorf("text before the error = %q, want %q", text.String(), "half an ans")
		}
		if len(errs) != 1 {
			t.Fatalf("got %d errors, want exactly one: %v", len(errs), errs)
		}
		if after > 0 {
			t.Errorf("%d chunks after the error; an error must be the last value", after)
		}
		var pe *llm.ProviderError
		if !errors.As(errs[0], &pe) {
			t.Fatalf("mid-stream error %q (%T) is not a *llm.ProviderError", errs[0], errs[0])
		}
	})

	run("CutStreamHasNoFinish", func(t *testing.T, m *Model, model llm.Model) {
		m.Add(Cut(
			&llm.BlockStart{Index: 0, Kind: llm.BlockText},
			&llm.TextDelta{Index: 0, Text: "dropped mid-"},
		))
		chunks, errs := drainAll(t.Context(), model, conformanceRequest())
		for _, c := range chunks {
			if _, ok := c.(*llm.Finish); ok {
				t.Error("a cut stream yielded a Finish; the caller would take a truncated answer as complete")
			}
		}
		if len(errs) > 1 {
			t.Errorf("got %d errors, want at most one", len(errs))
		}
		if len(errs) == 1 {
			var pe *llm.ProviderError
			if !errors.As(errs[0], &pe) {
				t.Errorf("error %q (%T) of a cut stream is not a *llm.ProviderError", errs[0], errs[0])
			}
		}
	})
}

func conformanceRequest() *llm.Request {
	return &llm.Request{
		Model:     "claude-sonnet-4-5",
		Messages:  []llm.Message{llm.UserText("What is rein?")},
		MaxTokens: 256,
	}
}

// collectChecked drains the stream, checks the chunk protocol, and returns
// the assembled response.
func collectChecked(t *testing.T, model llm.Model, req *llm.Request) *llm.Response {
	t.Helper()
	var a llm.Assembler
	finishes, usageAfterFinish, usages := 0, 0, 0
	var finishAt, n int
	for c, err := range model.Stream(t.Context(), req) {
		if err != nil {
			t.Fatalf("stream failed: %v", err)
		}
		n++
		switch c.(type) {
		case *llm.Finish:
			finishes++
			finishAt = n
		case *llm.UsageChunk:
			usages++
			if finishes > 0 {
				usageAfterFinish++
			}
		case nil:
			t.Fatalf("chunk %d is nil", n)
		}
		a.Add(c)
	}
	if finishes != 1 {
		t.Errorf("got %d Finish chunks, want exactly 1", finishes)
	}
	if finishes > 0 && finishAt != n {
		t.Errorf("Finish is chunk %d of %d, want it last", finishAt, n)
	}
	if usageAfterFinish > 0 {
		t.Errorf("%d usage chunks after Finish, want usage before finish", usageAfterFinish)
	}
	if usages == 0 {
		t.Error("no usage chunk")
	}
	return a.Response()
}

func checkCalls(t *testing.T, res *llm.Response, want []llm.ToolCall) {
	t.Helper()
	got := res.Message.ToolCalls()
	if len(got) != len(want) {
		t.Fatalf("got %d tool calls, want %d: %s", len(got), len(want), describeCalls(got))
	}
	for i := range want {
		if got[i].ID != want[i].ID || got[i].Name != want[i].Name || !jsonEqual(got[i].Args, want[i].Args) {
			t.Errorf("call %d = %s, want %s", i, describeCalls(got[i:i+1]), describeCalls([]*llm.ToolCall{&want[i]}))
		}
	}
}

func describeCalls(calls []*llm.ToolCall) string {
	var b bytes.Buffer
	for i, c := range calls {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s %s(%s)", c.ID, c.Name, c.Args)
	}
	return b.String()
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	return reflect.DeepEqual(x, y)
}

func drainAll(ctx context.Context, model llm.Model, req *llm.Request) (chunks []llm.Chunk, errs []error) {
	for c, err := range model.Stream(ctx, req) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		chunks = append(chunks, c)
	}
	return chunks, errs
}
