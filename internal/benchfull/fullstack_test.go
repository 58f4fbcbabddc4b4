//go:build unix

package benchfull_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/provider/anthropic"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/jsonl"
	"github.com/reinhq/rein/session/sqlite"
	"github.com/reinhq/rein/tool"
)

const model = "claude-sonnet-4-5"

var noop = &tool.Func{
	ToolSpec: tool.Spec{Name: "noop", Description: "Does nothing.", Schema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}}}`),
		Annotations: &tool.Annotations{ReadOnly: true}},
	Fn: func(context.Context, *tool.Call) (*tool.Result, error) { return tool.Text("ok"), nil },
}

// script is n model responses: n-1 calls of the no-op tool, each with its
// own id and arguments, then a final answer.
func script(n int) []llmtest.Entry {
	out := make([]llmtest.Entry, 0, n)
	for i := range n - 1 {
		out = append(out, llmtest.CallTool("toolu_"+strconv.Itoa(i), "noop", `{"n":`+strconv.Itoa(i)+`}`))
	}
	return append(out, llmtest.Reply("done"))
}

// runOn is one turn of n steps through the agent and the real Anthropic
// adapter against srv, over store.
func runOn(srv *llmtest.CannedServer, n int, store session.Store) error {
	m, err := anthropic.New(&anthropic.Options{APIKey: "test", BaseURL: srv.URL, HTTPClient: srv.Client()})
	if err != nil {
		return err
	}
	a, err := agent.New(&agent.Options{Model: m, Provider: "anthropic", ModelName: model, Tools: []tool.Tool{noop},
		System: "You run tools.", PromptCache: &llm.CacheHint{},
		Store: store, Limits: agent.Limits{MaxSteps: n + 1}})
	if err != nil {
		return err
	}
	defer a.Close()
	res, err := a.Run(context.Background(), &agent.RunRequest{Prompt: "Run the tool until told to stop."})
	if err != nil {
		return err
	}
	if res.Reason != session.EndCompleted {
		return fmt.Errorf("run ended %v", res.Reason)
	}
	return nil
}

// The benchmark's loop runs to the end, one request per step, each body
// longer than the last.
func TestFullStackLoop(t *testing.T) {
	srv := canned(t, 5)
	if err := runOn(srv, 5, session.NewMemStore()); err != nil {
		t.Fatal(err)
	}
	lengths := srv.Lengths()
	if len(lengths) != 5 {
		t.Fatalf("%d requests, want 5", len(lengths))
	}
	for i := 1; i < len(lengths); i++ {
		if lengths[i] <= lengths[i-1] {
			t.Errorf("body %d is %d bytes, not longer than the one before (%d)", i, lengths[i], lengths[i-1])
		}
	}
}

// BenchmarkFullStack runs an N-step tool loop (N model requests, N-1 tool
// calls) through agent.New with the real Anthropic adapter against a fake
// SSE provider, over the in-memory store, and, as its floor, the bare
// HTTP exchange of the same bytes: a plain client POSTing bodies of the
// sizes the agent sent and reading the same event streams. One op is a
// round: the loops of each, in processes of their own (see rounds).
func BenchmarkFullStack(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			rounds(b, n, "floor", "agent")
		})
	}
}

// BenchmarkFullStackStores is BenchmarkFullStack's agent loop, at the
// same lengths, over each durable store beside the in-memory one, in
// rounds (see rounds): what the log's durability costs a step end to end.
func BenchmarkFullStackStores(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		for _, st := range []string{"jsonl", "sqlite"} {
			b.Run(st+"/N="+strconv.Itoa(n), func(b *testing.B) {
				rounds(b, n, "mem", st)
			})
		}
	}
}

// open returns the store a loop named name runs over, keeping its files
// in dir: the in-memory store for the agent's own loops.
func open(name, dir string) (session.Store, error) {
	switch name {
	case "jsonl":
		return jsonl.Open(dir, nil)
	case "sqlite":
		return sqlite.Open(filepath.Join(dir, "s.db"), nil)
	}
	return session.NewMemStore(), nil
}

// canned is a fake provider answering the n requests of script(n),
// closed with t, if t is not nil.
func canned(t testing.TB, n int) *llmtest.CannedServer {
	srv, err := llmtest.NewCannedServer(t, model, script(n)...)
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// exchange POSTs body and reads the whole response.
func exchange(client *http.Client, url string, body []byte) error {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}
