package llmtest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
)

func request(text string) *llm.Request {
	return &llm.Request{Model: "test-model", Messages: []llm.Message{llm.UserText(text)}, MaxTokens: 64}
}

// drain collects every chunk and every error, continuing past errors so a
// test sees anything yielded after one.
func drain(ctx context.Context, m llm.Model, req *llm.Request) (chunks []llm.Chunk, errs []error) {
	for c, err := range m.Stream(ctx, req) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		chunks = append(chunks, c)
	}
	return chunks, errs
}

var prov = &llm.Provenance{Provider: "llmtest", Model: "test-model"}

func TestScriptedEntries(t *testing.T) {
	tests := []struct {
		name    string
		entry   llmtest.Entry
		want    []llm.Chunk
		wantErr string
	}{
		{
			name:  "reply",
			entry: llmtest.Reply("hi"),
			want: []llm.Chunk{
				&llm.BlockStart{Index: 0, Kind: llm.BlockText},
				&llm.TextDelta{Index: 0, Text: "hi"},
				&llm.BlockEnd{Index: 0},
				&llm.UsageChunk{Usage: llmtest.DefaultUsage},
				&llm.Finish{Reason: llm.FinishStop, Provenance: prov},
			},
		},
		{
			name:  "call tool",
			entry: llmtest.CallTool("c1", "echo", `{"x":1}`),
			want: []llm.Chunk{
				&llm.BlockStart{Index: 0, Kind: llm.BlockToolCall, ID: "c1", Name: "echo"},
				&llm.ToolCallDelta{Index: 0, Args: `{"x":1}`},
				&llm.BlockEnd{Index: 0},
				&llm.UsageChunk{Usage: llmtest.DefaultUsage},
				&llm.Finish{Reason: llm.FinishToolCalls, Provenance: prov},
			},
		},
		{
			name: "two calls with usage",
			entry: llmtest.CallTools(
				llm.ToolCall{ID: "a", Name: "x"},
				llm.ToolCall{ID: "b", Name: "y", Args: []byte(`{}`)},
			).WithUsage(llm.Usage{Input: 7, Output: 3}),
			want: []llm.Chunk{
				&llm.BlockStart{Index: 0, Kind: llm.BlockToolCall, ID: "a", Name: "x"},
				&llm.BlockEnd{Index: 0},
				&llm.BlockStart{Index: 1, Kind: llm.BlockToolCall, ID: "b", Name: "y"},
				&llm.ToolCallDelta{Index: 1, Args: `{}`},
				&llm.BlockEnd{Index: 1},
				&llm.UsageChunk{Usage: llm.Usage{Input: 7, Output: 3}},
				&llm.Finish{Reason: llm.FinishToolCalls, Provenance: prov},
			},
		},
		{
			name:  "malformed call",
			entry: llmtest.MalformedCall("c1", "echo", `{"x":`),
			want: []llm.Chunk{
				&llm.BlockStart{Index: 0, Kind: llm.BlockToolCall, ID: "c1", Name: "echo"},
				&llm.ToolCallDelta{Index: 0, Args: `{"x":`},
				&llm.BlockEnd{Index: 0},
				&llm.UsageChunk{Usage: llmtest.DefaultUsage},
				&llm.Finish{Reason: llm.FinishToolCalls, Provenance: prov},
			},
		},
		{
			name:  "chunks as given",
			entry: llmtest.Chunks(&llm.TextDelta{Text: "a"}, &llm.Finish{Reason: llm.FinishMaxTokens}),
			want:  []llm.Chunk{&llm.TextDelta{Text: "a"}, &llm.Finish{Reason: llm.FinishMaxTokens}},
		},
		{
			name:  "chunks with usage added before finish",
			entry: llmtest.Chunks(&llm.TextDelta{Text: "a"}, &llm.Finish{Reason: llm.FinishStop}).WithUsage(llm.Usage{Output: 1}),
			want:  []llm.Chunk{&llm.TextDelta{Text: "a"}, &llm.UsageChunk{Usage: llm.Usage{Output: 1}}, &llm.Finish{Reason: llm.FinishStop}},
		},
		{
			name:    "fail",
			entry:   llmtest.Fail(&llm.ProviderError{Kind: llm.ErrOverloaded, Provider: "p", StatusCode: 529}),
			wantErr: "p: overloaded (HTTP 529)",
		},
		{
			name:    "fail after",
			entry:   llmtest.FailAfter(errors.New("boom"), &llm.TextDelta{Text: "a"}),
			want:    []llm.Chunk{&llm.TextDelta{Text: "a"}},
			wantErr: "boom",
		},
		{
			name:  "cut",
			entry: llmtest.Cut(&llm.TextDelta{Text: "a"}),
			want:  []llm.Chunk{&llm.TextDelta{Text: "a"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := llmtest.NewModel(tt.entry)
			got, errs := drain(t.Context(), m, request("hello"))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("chunks (-want +got):\n%s", diff)
			}
			var gotErr string
			if len(errs) > 1 {
				t.Fatalf("got %d errors, want at most one: %v", len(errs), errs)
			}
			if len(errs) == 1 {
				gotErr = errs[0].Error()
			}
			if !strings.Contains(gotErr, tt.wantErr) || (tt.wantErr == "") != (gotErr == "") {
				t.Errorf("error = %q, want %q", gotErr, tt.wantErr)
			}
			if m.Calls() != 1 {
				t.Errorf("Calls() = %d, want 1", m.Calls())
			}
		})
	}
}

func TestRespondSeesRequest(t *testing.T) {
	m := llmtest.NewModel(llmtest.Respond(func(req *llm.Request) llmtest.Entry {
		return llmtest.Reply("echo: " + req.Messages[0].Text())
	}))
	res, err := llm.Collect(m.Stream(t.Context(), request("ping")))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Message.Text(); got != "echo: ping" {
		t.Errorf("text = %q, want %q", got, "echo: ping")
	}
}

func TestExhaustedScript(t *testing.T) {
	m := llmtest.NewModel(llmtest.Reply("one"))
	if _, err := llm.Collect(m.Stream(t.Context(), request("first"))); err != nil {
		t.Fatal(err)
	}
	_, err := llm.Collect(m.Stream(t.Context(), request("second question")))
	if !errors.Is(err, llmtest.ErrScriptExhausted) {
		t.Fatalf("err = %v, want ErrScriptExhausted", err)
	}
	for _, want := range []string{"call 2 has no entry", `user message [text "second question"]`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	m.Add(llmtest.Reply("three"))
	res, err := llm.Collect(m.Stream(t.Context(), request("third")))
	if err != nil || res.Message.Text() != "three" {
		t.Errorf("after Add: %v, %v", res, err)
	}
}

func TestNoWorkUntilRanged(t *testing.T) {
	m := llmtest.NewModel(llmtest.Reply("x"))
	_ = m.Stream(t.Context(), request("hi"))
	if m.Calls() != 0 || m.Remaining() != 1 {
		t.Errorf("Calls() = %d, Remaining() = %d after an unranged Stream, want 0, 1", m.Calls(), m.Remaining())
	}
}

func TestRequestsAreDeepCopies(t *testing.T) {
	m := llmtest.NewModel(llmtest.Reply("x"))
	req := request("original")
	if _, err := llm.Collect(m.Stream(t.Context(), req)); err != nil {
		t.Fatal(err)
	}
	// The caller may reuse its request: new fields and appended messages
	// do not change what was recorded.
	req.Model = "next-model"
	req.Messages = append(req.Messages, llm.UserText("appended"))
	got := m.Requests()
	if len(got) != 1 || got[0].Model != "test-model" || len(got[0].Messages) != 1 {
		t.Fatalf("recorded request followed the caller's reuse: %+v", got)
	}
	// What Requests returns is the caller's to change.
	got[0].Model = "changed"
	got[0].Messages[0].Parts[0].(*llm.Text).Text = "changed"
	again := m.Requests()
	if again[0].Messages[0].Text() != "original" || again[0].Model != "test-model" {
		t.Errorf("changing a returned request changed the record: %+v", again[0])
	}
	if req.Messages[0].Text() != "original" {
		t.Errorf("changing a returned request changed the caller's: %q", req.Messages[0].Text())
	}
}

func TestHangEndsWithContext(t *testing.T) {
	for _, tt := range []struct {
		name  string
		entry llmtest.Entry
		n     int
	}{
		{"hang", llmtest.Hang(), 0},
		{"hang after", llmtest.HangAfter(&llm.TextDelta{Text: "a"}), 1},
		{"delay", llmtest.Reply("late").WithDelay(time.Hour), 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := llmtest.NewModel(tt.entry)
			ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
			defer cancel()
			start := time.Now()
			chunks, errs := drain(ctx, m, request("hi"))
			if time.Since(start) > time.Second {
				t.Errorf("took %v to end", time.Since(start))
			}
			if len(chunks) != tt.n {
				t.Errorf("got %d chunks, want %d", len(chunks), tt.n)
			}
			if len(errs) != 1 || !errors.Is(errs[0], context.DeadlineExceeded) {
				t.Errorf("errors = %v, want one wrapping context.DeadlineExceeded", errs)
			}
		})
	}
}

func TestWithDelayWaits(t *testing.T) {
	m := llmtest.NewModel(llmtest.Reply("x").WithDelay(30 * time.Millisecond))
	start := time.Now()
	if _, err := llm.Collect(m.Stream(t.Context(), request("hi"))); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("returned after %v, want at least 30ms", d)
	}
}

func TestConcurrentStreams(t *testing.T) {
	const n = 20
	m := llmtest.NewModel()
	for range n {
		m.Add(llmtest.Reply("x"))
	}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			if _, err := llm.Collect(m.Stream(context.Background(), request("hi"))); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if m.Calls() != n || m.Remaining() != 0 {
		t.Errorf("Calls() = %d, Remaining() = %d, want %d, 0", m.Calls(), m.Remaining(), n)
	}
}

func TestScriptedModelConformance(t *testing.T) {
	llmtest.RunModelTests(t, func(t *testing.T, m *llmtest.Model) llm.Model { return m })
}

// BenchmarkModelStream shows a scripted step costs the same with a short
// and a long history.
func BenchmarkModelStream(b *testing.B) {
	for _, n := range []int{10, 10_000} {
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			req := &llm.Request{Model: "m"}
			for i := range n {
				req.Messages = append(req.Messages, llm.UserText(fmt.Sprint("message ", i)))
			}
			m := llmtest.NewModel()
			entry := llmtest.Reply("ok")
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				m.Add(entry)
				for _, err := range m.Stream(ctx, req) {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}

func TestWithUsageOnEntriesWithoutAResponse(t *testing.T) {
	u := llm.Usage{Input: 1, Output: 1}
	boom := errors.New("boom")
	m := llmtest.NewModel(
		llmtest.Fail(boom).WithUsage(u),
		llmtest.Respond(func(*llm.Request) llmtest.Entry { return llmtest.Reply("r") }).WithUsage(u),
	)
	chunks, errs := drain(t.Context(), m, request("a"))
	if len(chunks) != 0 || len(errs) != 1 || !errors.Is(errs[0], boom) {
		t.Errorf("Fail().WithUsage yielded %v, %v; want only the error", chunks, errs)
	}
	res, err := llm.Collect(m.Stream(t.Context(), request("b")))
	if err != nil || res.Usage != u || res.Message.Text() != "r" {
		t.Errorf("Respond().WithUsage = %+v, %v; want usage %+v", res, err, u)
	}
}
