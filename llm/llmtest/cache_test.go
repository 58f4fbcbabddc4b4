package llmtest_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
)

// clock is a settable time source for the cache's TTLs.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// cachedWire posts raw bodies and reads the usage of each response with
// the test wire client.
type cachedWire struct {
	t   *testing.T
	srv *llmtest.Server
}

func (c cachedWire) usage(path, body string) llm.Usage {
	c.t.Helper()
	code, _, resp := post(c.t, c.srv, path, body)
	if code != 200 {
		c.t.Fatalf("status %d: %s", code, resp)
	}
	var u llm.Usage
	for _, line := range strings.Split(resp, "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ev struct {
			Type    string `json:"type"`
			Message struct {
				Usage aUsage `json:"usage"`
			} `json:"message"`
			Usage json.RawMessage `json:"usage"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			c.t.Fatal(err)
		}
		switch {
		case ev.Type == "message_start":
			u.Merge(ev.Message.Usage.llm())
		case ev.Type == "message_delta":
			var a aUsage
			json.Unmarshal(ev.Usage, &a)
			u.Merge(a.llm())
		case ev.Type == "" && len(ev.Usage) > 0 && string(ev.Usage) != "null":
			var o oUsage
			json.Unmarshal(ev.Usage, &o)
			u.Merge(llm.Usage{Input: o.PromptTokens - o.PromptTokensDetails.CachedTokens, CacheRead: o.PromptTokensDetails.CachedTokens, Output: o.CompletionTokens})
		}
	}
	return u
}

// anthropicConversation builds a Messages body with a cached system prompt
// (TTL sysTTL) and turns user/assistant exchanges, the last user message
// carrying a 5m breakpoint.
func anthropicConversation(system string, sysTTL string, turns ...string) string {
	sysCC := `{"type":"ephemeral"}`
	if sysTTL != "" {
		sysCC = `{"type":"ephemeral","ttl":"` + sysTTL + `"}`
	}
	var msgs []string
	for i, text := range turns {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		cc := ""
		if i == len(turns)-1 {
			cc = `,"cache_control":{"type":"ephemeral"}`
		}
		q, _ := json.Marshal(text)
		msgs = append(msgs, `{"role":"`+role+`","content":[{"type":"text","text":`+string(q)+cc+`}]}`)
	}
	sys, _ := json.Marshal(system)
	return `{"model":"claude-sonnet-4-5","max_tokens":100,"stream":true,` +
		`"system":[{"type":"text","text":` + string(sys) + `,"cache_control":` + sysCC + `}],` +
		`"messages":[` + strings.Join(msgs, ",") + `]}`
}

func TestPromptCacheAnthropic(t *testing.T) {
	clk := &clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	m := llmtest.NewModel()
	for range 6 {
		m.Add(llmtest.Reply("ok"))
	}
	srv := llmtest.NewServerWithOptions(t, m, &llmtest.ServerOptions{MinCacheTokens: 100, Now: clk.Now})
	w := cachedWire{t, srv}
	system := strings.Repeat("You are a careful assistant. ", 40) // ~290 tokens
	q1 := strings.Repeat("first question ", 30)
	a1 := strings.Repeat("first answer ", 30)
	q2 := strings.Repeat("second question ", 30)

	// 1: nothing cached; the system prefix is written with 1h, the rest to
	// the message breakpoint with 5m.
	u1 := w.usage("/v1/messages", anthropicConversation(system, "1h", q1))
	if u1.CacheRead != 0 || u1.CacheWrite1h == 0 || u1.CacheWrite5m == 0 || u1.CacheWrite != u1.CacheWrite1h+u1.CacheWrite5m {
		t.Fatalf("first request usage = %+v, want 1h and 5m writes and no read", u1)
	}
	if u1.Output != llmtest.DefaultUsage.Output {
		t.Errorf("output = %d, want the script's %d", u1.Output, llmtest.DefaultUsage.Output)
	}
	whole1 := u1.PromptTokens()

	// 2: the same conversation one exchange longer reads all of request 1
	// and writes only the new part.
	u2 := w.usage("/v1/messages", anthropicConversation(system, "1h", q1, a1, q2))
	if u2.CacheRead != whole1-u1.Input {
		t.Errorf("second request read %d, want the %d tokens request 1 cached", u2.CacheRead, whole1-u1.Input)
	}
	if u2.CacheWrite1h != 0 || u2.CacheWrite5m == 0 {
		t.Errorf("second request writes = %+v, want only a 5m write of the new turns", u2)
	}
	if u2.PromptTokens() <= whole1 {
		t.Errorf("second prompt %d tokens, not longer than the first %d", u2.PromptTokens(), whole1)
	}

	// 3: a changed system prompt shares no prefix: everything is written again.
	u3 := w.usage("/v1/messages", anthropicConversation("Different. "+system, "1h", q1))
	if u3.CacheRead != 0 || u3.CacheWrite == 0 {
		t.Errorf("changed system prompt usage = %+v, want a miss", u3)
	}

	// 4: after 10 minutes the 5m entries are gone but the 1h system entry
	// is still there.
	clk.Advance(10 * time.Minute)
	u4 := w.usage("/v1/messages", anthropicConversation(system, "1h", q1, a1, q2))
	if u4.CacheRead == 0 || u4.CacheRead >= u2.CacheRead || u4.CacheWrite1h != 0 {
		t.Errorf("after 10m usage = %+v, want a read of the 1h system prefix only", u4)
	}

	// 5: after two hours everything has expired.
	clk.Advance(2 * time.Hour)
	u5 := w.usage("/v1/messages", anthropicConversation(system, "1h", q1))
	if u5.CacheRead != 0 {
		t.Errorf("after 2h usage = %+v, want no read", u5)
	}

	// 6: an entry that sets its own usage is left alone.
	m.Add(llmtest.Reply("ok").WithUsage(llm.Usage{Input: 7, Output: 3}))
	for m.Remaining() > 1 {
		w.usage("/v1/messages", anthropicConversation(system, "1h", q1))
	}
	if got := w.usage("/v1/messages", anthropicConversation(system, "1h", q1)); got != (llm.Usage{Input: 7, Output: 3}) {
		t.Errorf("scripted usage = %+v, want it untouched", got)
	}
}

func TestPromptCacheMinimumLength(t *testing.T) {
	m := llmtest.NewModel(llmtest.Reply("a"), llmtest.Reply("b"))
	srv := llmtest.NewServer(t, m) // default minimum: 1024 tokens
	w := cachedWire{t, srv}
	short := anthropicConversation("Be brief.", "", "hi")
	for i := range 2 {
		if got := w.usage("/v1/messages", short); got != llmtest.DefaultUsage {
			t.Errorf("request %d of a short prompt: usage %+v, want the script's default", i, got)
		}
	}
}

func TestPromptCacheOpenAIAutomatic(t *testing.T) {
	m := llmtest.NewModel(llmtest.Reply("a"), llmtest.Reply("b"), llmtest.Reply("c"))
	srv := llmtest.NewServerWithOptions(t, m, &llmtest.ServerOptions{MinCacheTokens: 50})
	w := cachedWire{t, srv}
	sys := strings.Repeat("system text ", 40)
	body := func(msgs ...string) string {
		all := []string{`{"role":"system","content":"` + sys + `"}`}
		for i, s := range msgs {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			all = append(all, `{"role":"`+role+`","content":"`+s+`"}`)
		}
		return `{"model":"gpt-5-mini","stream":true,"stream_options":{"include_usage":true},"messages":[` + strings.Join(all, ",") + `]}`
	}
	u1 := w.usage("/v1/chat/completions", body("question one"))
	if diff := cmp.Diff(llmtest.DefaultUsage, u1); diff != "" {
		t.Errorf("first request (-want +got):\n%s", diff) // OpenAI reports no cache writes
	}
	u2 := w.usage("/v1/chat/completions", body("question one", "answer one", "question two"))
	if u2.CacheRead == 0 || u2.CacheWrite != 0 || u2.Input == 0 {
		t.Errorf("second request usage = %+v, want cached tokens from the first prompt and new input", u2)
	}
	u3 := w.usage("/v1/chat/completions", body("something else"))
	if u3.CacheRead != 0 {
		t.Errorf("diverging request usage = %+v, want no cached tokens", u3)
	}
}

func TestCountTokens(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.NewModel())
	code, _, body := post(t, srv, "/v1/messages/count_tokens", `{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"`+strings.Repeat("x", 400)+`"}]}`)
	var got struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.Unmarshal([]byte(body), &got); code != 200 || err != nil || got.InputTokens < 100 || got.InputTokens > 120 {
		t.Errorf("count_tokens = %d %s", code, body)
	}
}
