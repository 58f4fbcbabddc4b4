package openai

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/provider/internal/wirebody"
)

// bodies is a model under test: its body built from kept encodings, as
// Stream does, and from scratch.
type bodies struct {
	name        string
	incremental func(*llm.Request) ([]byte, error)
	scratch     func(*llm.Request) ([]byte, error)
}

func chatBodies(t *testing.T, o *Options) bodies {
	t.Helper()
	m, err := NewChat(o)
	if err != nil {
		t.Fatal(err)
	}
	return bodiesOf("chat "+m.Provider(), &m.convs, m.cfg.chatBody)
}

func respBodies(t *testing.T, o *Options) bodies {
	t.Helper()
	m, err := NewResponses(o)
	if err != nil {
		t.Fatal(err)
	}
	return bodiesOf("responses "+m.Provider(), &m.convs, m.cfg.respBody)
}

// bodiesOf builds with the items convs keeps for a request's
// conversation, as Stream does, or with nothing kept.
func bodiesOf(name string, convs *wirebody.Conversations[itemCache], build func(*itemCache, *llm.Request) (wirebody.Body, error)) bodies {
	return bodies{name, func(req *llm.Request) ([]byte, error) {
		conv := convs.Lock(req)
		defer conv.Unlock()
		b, err := build(&conv.Cache, req)
		return b.Bytes(), err
	}, func(req *llm.Request) ([]byte, error) {
		b, err := build(new(itemCache), req)
		return b.Bytes(), err
	}}
}

// growth appends one tool step, with reasoning the provider replays.
func growth(msgs []llm.Message, n int) []llm.Message {
	id := llm.CallID("call_" + strconv.Itoa(n))
	return append(msgs,
		llm.Message{Role: llm.RoleAssistant, Provenance: &llm.Provenance{Provider: "openai", Model: "gpt-5"}, Parts: []llm.Part{
			&llm.Reasoning{Text: "step " + strconv.Itoa(n), Signature: "rs_" + strconv.Itoa(n), Redacted: "enc"},
			&llm.Text{Text: "Checking <weather> & more."},
			&llm.ToolCall{ID: id, Name: "weather", Args: json.RawMessage(`{"city":"Florence","n":` + strconv.Itoa(n) + `}`)},
		}},
		llm.Message{Role: llm.RoleUser, Parts: []llm.Part{&llm.ToolResult{CallID: id, Parts: []llm.Part{&llm.Text{Text: "40 C"}}}}},
	)
}

// A body built from kept encodings equals one built from scratch through
// growth, compaction, elision, tool-list changes, a model switch and a
// fallback to another adapter instance, for both APIs.
func TestIncrementalBodyEqualsScratch(t *testing.T) {
	key := &Options{APIKey: "sk-test", BaseURL: "http://127.0.0.1:1/v1"}
	local := &Options{Provider: ProviderLlamaCpp, BaseURL: "http://127.0.0.1:1/v1"}
	for _, pair := range [][2]bodies{
		{chatBodies(t, key), chatBodies(t, local)},
		{respBodies(t, key), respBodies(t, local)},
	} {
		primary, fallback := pair[0], pair[1]
		t.Run(primary.name, func(t *testing.T) {
			req := &llm.Request{Model: "gpt-5", System: []llm.Text{{Text: "Be terse."}}, Tools: fullRequest().Tools,
				Messages: []llm.Message{llm.UserText("Weather, many times?")}}
			check := func(what string, b bodies) {
				t.Helper()
				req.Messages = req.Messages[:len(req.Messages):len(req.Messages)]
				want, err := b.scratch(req)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				got, err := b.incremental(req)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if diff := cmp.Diff(string(want), string(got)); diff != "" {
					t.Fatalf("%s: %s incremental body differs from scratch (-scratch +incremental):\n%s", what, b.name, diff)
				}
				if !json.Valid(got) {
					t.Fatalf("%s: body is not JSON:\n%s", what, got)
				}
			}
			for i := range 8 {
				check(fmt.Sprintf("growth %d", i), primary)
				req.Messages = growth(req.Messages, i)
			}
			check("growth", primary)
			req.Messages = req.Messages[:len(req.Messages)-3]
			check("shrunk", primary)
			req.Messages = append([]llm.Message{llm.UserText("Summary: 40 C throughout.")}, req.Messages[5:]...)
			check("compaction", primary)
			req.Messages = growth(req.Messages, 100)
			check("after compaction", primary)
			req.Messages[2] = llm.Message{Role: llm.RoleUser, Parts: []llm.Part{&llm.ToolResult{CallID: "call_5", Parts: []llm.Part{&llm.Text{Text: "[elided]"}}}}}
			check("elision", primary)
			req.Tools = req.Tools[:1]
			check("tool removed", primary)
			req.Model = "gpt-5-mini"
			check("model switch", primary)
			req.System = nil
			check("no system", primary)
			check("fallback", fallback)
			req.Messages = growth(req.Messages, 101)
			check("fallback step", fallback)
			check("back to primary", primary)
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Parts: []llm.Part{&llm.Text{Text: "Extra."}}}, llm.UserText(""))
			check("system message and empty text", primary)
			req.Messages = []llm.Message{llm.UserText("A new conversation.")}
			check("new conversation", primary)
		})
	}
}

// Concurrent streams on one model each get their own request's body.
func TestIncrementalConcurrent(t *testing.T) {
	b := chatBodies(t, &Options{APIKey: "sk-test", BaseURL: "http://127.0.0.1:1/v1"})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			msgs := []llm.Message{llm.UserText("conversation " + strconv.Itoa(i))}
			for n := range 20 {
				msgs = growth(msgs, n)
				req := &llm.Request{Model: "gpt-5", Messages: msgs}
				got, err := b.incremental(req)
				want, err2 := b.scratch(req)
				if err != nil || err2 != nil || string(got) != string(want) {
					t.Errorf("conversation %d: incremental body differs from scratch (%v, %v)", i, err, err2)
					return
				}
			}
		})
	}
	wg.Wait()
}

// Conversations taking turns on one model each keep their encodings: one
// conversation's request leaves what the other keeps as it was, so the
// other's next request encodes only its new messages.
func TestInterleavedConversationsKeepTheirItems(t *testing.T) {
	m, err := NewResponses(&Options{APIKey: "sk-test", BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	b := bodiesOf("responses", &m.convs, m.cfg.respBody)
	a := &llm.Request{Model: "gpt-5", Messages: []llm.Message{llm.UserText("a")}}
	c := &llm.Request{Model: "gpt-5", Messages: []llm.Message{llm.UserText("c")}}
	for n := range 4 {
		for _, req := range []*llm.Request{a, c} {
			if n > 0 && m.keeps(req) != len(req.Messages) {
				t.Fatalf("step %d of %s: %d of its %d messages kept", n, req.Messages[0].Text(), m.keeps(req), len(req.Messages))
			}
			req.Messages = growth(req.Messages, n)
			if _, err := b.incremental(req); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// keeps returns how many of req's messages, from the first, m keeps the
// encoding of.
func (r *Responses) keeps(req *llm.Request) int {
	conv := r.convs.Lock(req)
	defer conv.Unlock()
	n, keys := 0, conv.Cache.keys
	for n < len(keys) && n < len(req.Messages) && keys[n].Is(&req.Messages[n]) {
		n++
	}
	return n
}

// A request encodes only the messages not kept from the last one.
func TestItemCacheEncodesOnlyNew(t *testing.T) {
	var c itemCache
	var encoded []string
	enc := func(w *itemWriter, m *llm.Message) error {
		encoded = append(encoded, m.Text())
		_, err := encodeItems(w, m, nil, func(out []string, m *llm.Message) ([]string, error) { return append(out, m.Text()), nil })
		return err
	}
	msgs := []llm.Message{llm.UserText("a"), llm.UserText("b")}
	step := func(want ...string) {
		t.Helper()
		encoded = nil
		items, err := c.update(msgs, enc)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, encoded); diff != "" {
			t.Errorf("encoded (-want +got):\n%s", diff)
		}
		var all []string
		for _, m := range msgs {
			all = append(all, strconv.Quote(m.Text()))
		}
		if got, wantItems := string(items), strings.Join(all, ","); got != wantItems {
			t.Errorf("items = %s, want %s", got, wantItems)
		}
	}
	step("a", "b")
	msgs = append(msgs, llm.UserText("c"))
	step("c")
	shared, _ := c.update(msgs, enc)
	msgs[1] = llm.UserText("B")
	step("B", "c")
	if string(shared) != `"a","b","c"` {
		t.Errorf("an earlier body's items changed to %s", shared)
	}
	msgs = msgs[:1]
	step()
}

// A request that fails on a message leaves what was kept usable.
func TestIncrementalAfterAFailedMessage(t *testing.T) {
	for _, b := range []bodies{chatBodies(t, &Options{APIKey: "sk-test", BaseURL: "http://127.0.0.1:1/v1"}), respBodies(t, &Options{APIKey: "sk-test", BaseURL: "http://127.0.0.1:1/v1"})} {
		msgs := growth([]llm.Message{llm.UserText("go")}, 1)
		bad := append(msgs[:len(msgs):len(msgs)], llm.UserText("fine"), llm.Message{Role: llm.RoleUser, Parts: []llm.Part{&llm.ToolCall{ID: "x", Name: "y"}}})
		if _, err := b.incremental(&llm.Request{Model: "gpt-5", Messages: bad}); err == nil {
			t.Fatalf("%s: a tool call in a user message was accepted", b.name)
		}
		good := append(bad[:len(bad)-1:len(bad)-1], llm.UserText("also fine"))
		req := &llm.Request{Model: "gpt-5", Messages: good}
		got, err := b.incremental(req)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := b.scratch(req)
		if diff := cmp.Diff(string(want), string(got)); diff != "" {
			t.Errorf("%s: after a failed request (-scratch +incremental):\n%s", b.name, diff)
		}
	}
}
