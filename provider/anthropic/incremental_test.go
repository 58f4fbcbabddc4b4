package anthropic

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/provider/internal/wirebody"
)

// conversation grows a history the way the agent loop does: settled
// messages keep their parts from one request to the next.
type conversation struct {
	msgs []llm.Message
	n    int
}

func (c *conversation) step() {
	c.n++
	id := llm.CallID("toolu_" + strconv.Itoa(c.n))
	c.msgs = append(c.msgs,
		llm.Message{Role: llm.RoleAssistant, Provenance: &llm.Provenance{Provider: "anthropic", Model: "claude-sonnet-4-5"}, Parts: []llm.Part{
			&llm.Reasoning{Text: "thinking " + strconv.Itoa(c.n), Signature: "sig" + strconv.Itoa(c.n)},
			&llm.Text{Text: "Calling <the> tool & co."},
			&llm.ToolCall{ID: id, Name: "weather", Args: json.RawMessage(`{ "location": "Paris",  "n": ` + strconv.Itoa(c.n) + ` }`)},
		}},
		llm.Message{Role: llm.RoleUser, Parts: []llm.Part{&llm.ToolResult{CallID: id, Parts: []llm.Part{&llm.Text{Text: "22 C\n"}}}}},
	)
}

// scratch is the body built with nothing kept.
func scratch(t *testing.T, m *Model, req *llm.Request) []byte {
	t.Helper()
	b, err := build(new(bodyCache), req, m.cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// incremental is the body built with m's kept encodings, as Stream does.
func incremental(t *testing.T, m *Model, req *llm.Request) []byte {
	t.Helper()
	b, err := buildKept(m, req)
	if err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// buildKept builds req's body with the encodings m keeps for its
// conversation.
func buildKept(m *Model, req *llm.Request) (wirebody.Body, error) {
	conv := m.convs.Lock(req)
	defer conv.Unlock()
	return build(&conv.Cache, req, m.cfg, false)
}

// kept returns the encodings m keeps for req's conversation.
func kept(m *Model, req *llm.Request) *bodyCache {
	conv := m.convs.Lock(req)
	conv.Unlock()
	return &conv.Cache
}

func newTestModel(t *testing.T, provider string) *Model {
	t.Helper()
	m, err := New(&Options{APIKey: "test", Provider: provider, BaseURL: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// A body built from kept encodings equals one built from scratch through
// growth, compaction, elision, tool-list changes, a model switch, a
// fallback to another adapter, and moving and explicit cache breakpoints.
func TestIncrementalBodyEqualsScratch(t *testing.T) {
	primary, fallback := newTestModel(t, "anthropic"), newTestModel(t, "bedrock")
	conv := &conversation{msgs: []llm.Message{llm.UserText("Weather in Paris, many times?")}}
	req := &llm.Request{
		Model:  "claude-sonnet-4-5",
		System: []llm.Text{{Text: "You are a weather bot."}, {Text: "Be brief."}},
		Tools:  tools("weather", "forecast"),
		Cache:  &llm.CacheHint{},
	}
	check := func(what string, m *Model) {
		t.Helper()
		req.Messages = conv.msgs[:len(conv.msgs):len(conv.msgs)]
		want := scratch(t, m, req)
		if diff := cmp.Diff(string(want), string(incremental(t, m, req))); diff != "" {
			t.Fatalf("%s: incremental body differs from scratch (-scratch +incremental):\n%s", what, diff)
		}
		checkBreakpoints(t, prettyJSON(t, want))
	}
	for i := range 12 {
		check(fmt.Sprintf("growth %d", i), primary)
		conv.step()
	}
	check("growth", primary)

	// The history shrinks (a step retried with less), then grows again.
	conv.msgs = conv.msgs[:len(conv.msgs)-5]
	check("shrunk", primary)
	conv.step()
	check("regrown", primary)

	// Compaction: a summary replaces the oldest messages.
	conv.msgs = append([]llm.Message{llm.UserText("Summary: it was 22 C, six times.")}, conv.msgs[7:]...)
	check("compaction", primary)
	conv.step()
	check("after compaction", primary)

	// Elision: a tool result's parts replaced.
	old := conv.msgs[2].Parts[0].(*llm.ToolResult)
	conv.msgs[2] = llm.Message{Role: llm.RoleUser, Parts: []llm.Part{&llm.ToolResult{CallID: old.CallID, Parts: []llm.Part{&llm.Text{Text: "[elided]"}}}}}
	check("elision", primary)

	// Tool list changes: one more, then a description edited.
	req.Tools = tools("weather", "forecast", "alerts")
	check("tool added", primary)
	req.Tools[1].Description = "Forecast, 7 days"
	check("tool edited", primary)
	req.Tools = req.Tools[:2]
	check("tool removed", primary)
	req.System = req.System[1:]
	check("system section removed", primary)

	req.Model = "claude-opus-4-1"
	check("model switch", primary)

	// Fallback: another adapter, whose provider does not replay the
	// primary's thinking, then back.
	check("fallback", fallback)
	conv.step()
	check("fallback step", fallback)
	check("back to primary", primary)

	hintsAndMerges(conv, req, func(what string) { check(what, primary) })

	// A new conversation is kept beside the first.
	first := &llm.Request{Messages: conv.msgs}
	conv = &conversation{msgs: []llm.Message{llm.UserText("Something else.")}}
	check("new conversation", primary)
	if n := len(kept(primary, req).msgs); n != 1 {
		t.Errorf("kept %d messages for a new conversation, want 1", n)
	}
	if n := len(kept(primary, first).msgs); n != len(first.Messages) {
		t.Errorf("kept %d messages of the first conversation after a second, want %d", n, len(first.Messages))
	}
}

// hintsAndMerges checks explicit hints on old messages (past the limit,
// with a 1-hour one), automatic breakpoints off and at 1 hour, a system
// message, merged user turns, and a tool result after text.
func hintsAndMerges(conv *conversation, req *llm.Request, check func(string)) {
	conv.msgs[1] = llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{&llm.Text{Text: "Noted.", Cache: &llm.CacheHint{TTL: time.Hour}}}}
	conv.msgs[3] = userText("pinned", &llm.CacheHint{})
	check("explicit hints")
	req.Cache = nil
	check("no automatic breakpoints")
	req.Cache = &llm.CacheHint{TTL: time.Hour}
	conv.step()
	check("1h automatic breakpoints")
	conv.msgs = append(conv.msgs, llm.Message{Role: llm.RoleSystem, Parts: []llm.Part{&llm.Text{Text: "Extra context.", Cache: &llm.CacheHint{}}}},
		llm.UserText("And also:"),
		llm.Message{Role: llm.RoleUser, Parts: []llm.Part{&llm.Text{Text: "hurry"}, &llm.ToolResult{CallID: "toolu_x", Parts: []llm.Part{&llm.Text{Text: "late", Cache: &llm.CacheHint{}}}}}})
	check("system and merged turns")
	conv.step()
	check("after merged turns")
}

func prettyJSON(t *testing.T, b []byte) []byte {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, b)
	}
	out, _ := json.Marshal(v)
	return out
}

// Sending a tool loop step by step through one Model ends with the same
// bytes as the golden request built in one go.
func TestIncrementalStreamMatchesGolden(t *testing.T) {
	loop := toolLoop()
	var exs []exchange
	for range 4 {
		exs = append(exs, sse(okStream))
	}
	m, rec := replay(t, exs...)
	req := &llm.Request{
		Model:  "claude-sonnet-4-5",
		System: []llm.Text{{Text: "You are a weather bot."}, {Text: "Be brief."}},
		Tools:  tools("weather", "forecast"),
		Cache:  &llm.CacheHint{},
	}
	for i, n := range []int{1, 3, 5, 7} {
		req.Messages = loop[:n]
		if _, err := collect(m.Stream(context.Background(), req)); err != nil {
			t.Fatal(err)
		}
		if i == 3 {
			var v any
			if err := json.Unmarshal(rec.body(i), &v); err != nil {
				t.Fatal(err)
			}
			got, _ := json.MarshalIndent(v, "", "  ")
			checkGolden(t, "request_cache_auto_tool_loop.json", append(got, '\n'))
		}
	}
}

// Concurrent streams on one Model each send their own request's body.
func TestIncrementalConcurrent(t *testing.T) {
	m := newTestModel(t, "anthropic")
	convs := make([]*conversation, 4)
	for i := range convs {
		convs[i] = &conversation{msgs: []llm.Message{llm.UserText("conversation " + strconv.Itoa(i))}}
	}
	var wg sync.WaitGroup
	for i := range convs {
		wg.Go(func() {
			c := convs[i]
			for range 20 {
				c.step()
				req := &llm.Request{Model: "m", Tools: tools("weather"), Cache: &llm.CacheHint{}, Messages: c.msgs}
				got, err := buildKept(m, req)
				want, err2 := build(new(bodyCache), req, m.cfg, false)
				if err != nil || err2 != nil || string(got.Bytes()) != string(want.Bytes()) {
					t.Errorf("conversation %d: incremental body differs from scratch (%v, %v)", i, err, err2)
					return
				}
			}
		})
	}
	wg.Wait()
}

// A step encodes only the new messages: the kept ones keep their bytes.
func TestIncrementalEncodesOnlyNew(t *testing.T) {
	m := newTestModel(t, "anthropic")
	conv := &conversation{msgs: []llm.Message{llm.UserText("go")}}
	req := &llm.Request{Model: "m", Tools: tools("weather"), Cache: &llm.CacheHint{}}
	var bufs []*byte
	for i := range 5 {
		conv.step()
		req.Messages = conv.msgs
		incremental(t, m, req)
		var again []int
		if again, bufs = reencoded(kept(m, req), bufs); len(again) > 0 {
			t.Fatalf("step %d re-encoded messages %v", i, again)
		}
	}
	// Elision re-encodes the elided message alone.
	conv.msgs[2] = toolResult("toolu_1", "[elided]")
	incremental(t, m, req)
	if again, _ := reencoded(kept(m, req), bufs); !slices.Equal(again, []int{2}) {
		t.Errorf("after eliding message 2, re-encoded %v", again)
	}
}

// reencoded returns which of the messages whose encodings were at before
// c now keeps encoded anew, and where each of c's encodings is now.
func reencoded(c *bodyCache, before []*byte) (again []int, now []*byte) {
	for j := range c.msgs {
		now = append(now, &c.msgs[j].buf[0])
		if j < len(before) && now[j] != before[j] {
			again = append(again, j)
		}
	}
	return again, now
}

// Conversations taking turns on one Model (a server's sessions, subagents
// side by side) each encode only their new messages: one's request does
// not undo what the other keeps.
func TestInterleavedConversationsEncodeOnlyNew(t *testing.T) {
	m := newTestModel(t, "anthropic")
	type side struct {
		conv *conversation
		req  *llm.Request
		bufs []*byte
	}
	sides := []*side{{conv: &conversation{msgs: []llm.Message{llm.UserText("a")}}}, {conv: &conversation{msgs: []llm.Message{llm.UserText("b")}}}}
	for i := range 6 {
		for k, sd := range sides {
			sd.conv.step()
			sd.req = &llm.Request{Model: "m", Tools: tools("weather"), Cache: &llm.CacheHint{}, Messages: sd.conv.msgs}
			if diff := cmp.Diff(string(scratch(t, m, sd.req)), string(incremental(t, m, sd.req))); diff != "" {
				t.Fatalf("step %d of conversation %d (-scratch +incremental):\n%s", i, k, diff)
			}
			var again []int
			if again, sd.bufs = reencoded(kept(m, sd.req), sd.bufs); len(again) > 0 {
				t.Fatalf("step %d of conversation %d re-encoded messages %v", i, k, again)
			}
		}
	}
}

// The body goes out with its length, not chunked, and can be read again.
func TestStreamSendsContentLength(t *testing.T) {
	var got struct {
		length  int64
		chunked []string
		body    int
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.length, got.chunked, got.body = r.ContentLength, r.TransferEncoding, len(b)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, okStream)
	}))
	defer srv.Close()
	m, err := New(&Options{APIKey: "test", BaseURL: srv.URL, HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	conv := &conversation{msgs: []llm.Message{llm.UserText("go")}}
	for range 8 {
		conv.step()
	}
	req := &llm.Request{Model: "m", Messages: conv.msgs}
	for range 2 { // the second request sends the settled prefix as kept
		if _, err := collect(m.Stream(context.Background(), req)); err != nil {
			t.Fatal(err)
		}
		if got.length <= 0 || got.length != int64(got.body) || len(got.chunked) > 0 {
			t.Errorf("Content-Length %d, transfer encoding %v, body %d bytes", got.length, got.chunked, got.body)
		}
	}
	if kept(m, req).settled == 0 {
		t.Error("nothing settled after two requests of 17 messages")
	}
	body, err := build(new(bodyCache), req, m.cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := io.ReadAll(body.Reader())
	if string(again) != string(body.Bytes()) {
		t.Error("a second reader reads other bytes")
	}
}

// A request that fails on a message leaves what was kept usable.
func TestIncrementalAfterAFailedMessage(t *testing.T) {
	m := newTestModel(t, "anthropic")
	conv := &conversation{msgs: []llm.Message{llm.UserText("go")}}
	for range 6 {
		conv.step()
	}
	bad := append(conv.msgs[:len(conv.msgs):len(conv.msgs)], llm.Message{Role: llm.RoleUser, Parts: []llm.Part{&llm.ToolCall{ID: "x", Name: "y"}}})
	req := &llm.Request{Model: "m", Cache: &llm.CacheHint{}, Messages: conv.msgs}
	incremental(t, m, req)
	req.Messages = bad
	if _, err := buildKept(m, req); err == nil {
		t.Fatal("a tool call in a user message was accepted")
	}
	conv.step()
	req.Messages = conv.msgs
	if diff := cmp.Diff(string(scratch(t, m, req)), string(incremental(t, m, req))); diff != "" {
		t.Errorf("after a failed request (-scratch +incremental):\n%s", diff)
	}
}
