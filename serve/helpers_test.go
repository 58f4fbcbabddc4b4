package serve_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/reinhq/rein/internal/testwait"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/serve"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/fs"
	"github.com/reinhq/rein/tool/sandbox"
)

const testToken = "test-token"

// fixture is a server over a memory store whose agents play a scripted
// model, with the file tools in a temporary workspace and any extra tools.
type fixture struct {
	t     testing.TB
	srv   *serve.Server
	ts    *httptest.Server
	store *session.MemStore
	model *llmtest.Model
	root  string
}

type fixtureOptions struct {
	tools    []tool.Tool
	markdown bool
	wrap     func(llm.Model) llm.Model // wraps the scripted model
	flush    time.Duration             // serve.Options.FlushInterval
	idle     time.Duration             // serve.Options.IdleTimeout
	closed   *atomic.Int32             // counts the agents closed, if set
}

func newFixture(t testing.TB, fo *fixtureOptions, entries ...llmtest.Entry) *fixture {
	t.Helper()
	if fo == nil {
		fo = &fixtureOptions{}
	}
	f := &fixture{t: t, store: session.NewMemStore(), model: llmtest.NewModel(entries...), root: t.TempDir()}
	opts := &serve.Options{
		Store: f.store, Token: testToken, Root: f.root, FlushInterval: fo.flush, IdleTimeout: fo.idle,
		NewAgent: func(ctx context.Context, req *serve.SessionRequest) (*serve.Handle, error) {
			tools := fs.NewTools(&sandbox.Policy{Root: req.Cwd}, nil)
			tools = append(tools, fo.tools...)
			var m llm.Model = f.model
			if fo.wrap != nil {
				m = fo.wrap(m)
			}
			a, err := agent.New(&agent.Options{
				Model: m, Provider: "anthropic", ModelName: "claude-sonnet-4-5",
				Store: f.store, Session: req.Session, Tools: tools,
				Approver: tool.NewPolicy(&tool.PolicyOptions{AllowReadOnly: true, Approver: req.Approver}),
				Limits:   agent.Limits{MaxSteps: req.MaxSteps},
			})
			if err != nil || fo.closed == nil {
				return &serve.Handle{Agent: a}, err
			}
			return &serve.Handle{Agent: a, Close: func() error { fo.closed.Add(1); return a.Close() }}, nil
		},
	}
	if fo.markdown {
		opts.Markdown = func(w io.Writer, events []session.Event) error {
			for _, ev := range events {
				if _, err := io.WriteString(w, "- "+ev.Data.EventType()+"\n"); err != nil {
					return err
				}
			}
			return nil
		}
	}
	srv, err := serve.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	f.ts = httptest.NewServer(srv)
	t.Cleanup(func() {
		f.ts.CloseClientConnections()
		if err := srv.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		f.ts.Close()
		f.store.Close()
	})
	return f
}

// do sends a request with the token and returns the status and body.
func (f *fixture) do(method, path, body string) (int, []byte) {
	f.t.Helper()
	req, err := http.NewRequest(method, f.ts.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return resp.StatusCode, b
}

// want sends a request and fails unless it answers status; it decodes the
// body into out when out is not nil.
func (f *fixture) want(status int, method, path, body string, out any) []byte {
	f.t.Helper()
	got, b := f.do(method, path, body)
	if got != status {
		f.t.Fatalf("%s %s: status %d, want %d; body %s", method, path, got, status, b)
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			f.t.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
	return b
}

// errorCode returns the code of a JSON error body.
func errorCode(t testing.TB, b []byte) string {
	t.Helper()
	var e struct {
		Error struct{ Code, Message string }
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Code == "" || e.Error.Message == "" {
		t.Fatalf("not a JSON error with a code and a message: %s", b)
	}
	return e.Error.Code
}

// create makes a session and returns its id.
func (f *fixture) create(body string) session.ID {
	f.t.Helper()
	var s serve.Session
	f.want(http.StatusCreated, "POST", "/v1/sessions", body, &s)
	return s.ID
}

// frame is one Server-Sent Event.
type frame struct {
	id    string
	hasID bool
	data  string
}

// wireEvent is the part of an event's JSON the tests look at.
type wireEvent struct {
	Seq  int64           `json:"seq"`
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

func (fr frame) event() (wireEvent, error) {
	var e wireEvent
	if err := json.Unmarshal([]byte(fr.data), &e); err != nil {
		return e, fmt.Errorf("frame data %q: %v", fr.data, err)
	}
	if fr.hasID != (e.Seq > 0) || fr.hasID && fr.id != strconv.FormatInt(e.Seq, 10) {
		return e, fmt.Errorf("event %s seq %d has id %q: persisted events carry their seq as id, transient ones none", e.Type, e.Seq, fr.id)
	}
	return e, nil
}

// sse is an open event stream.
type sse struct {
	resp *http.Response
	r    *bufio.Reader
}

// openSSE opens the event stream of id, resuming after lastID when it is
// not empty.
func (f *fixture) openSSE(ctx context.Context, id session.ID, lastID string) *sse {
	f.t.Helper()
	s, err := f.dialSSE(ctx, id, lastID)
	if err != nil {
		f.t.Fatal(err)
	}
	return s
}

// dialSSE is openSSE for any goroutine.
func (f *fixture) dialSSE(ctx context.Context, id session.ID, lastID string) (*sse, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", f.ts.URL+"/v1/sessions/"+string(id)+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("events: status %d: %s", resp.StatusCode, b)
	}
	return &sse{resp: resp, r: bufio.NewReader(resp.Body)}, nil
}

func (s *sse) Close() { s.resp.Body.Close() }

// next reads the next event, skipping comments.
func (s *sse) next() (frame, error) {
	var fr frame
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return fr, err
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "":
			if fr.data != "" {
				return fr, nil
			}
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			fr.id, fr.hasID = strings.TrimPrefix(line, "id: "), true
		case strings.HasPrefix(line, "data: "):
			fr.data += strings.TrimPrefix(line, "data: ")
		}
	}
}

// until reads events until one of type typ, returning every event read.
func (s *sse) until(t testing.TB, typ string) []wireEvent {
	t.Helper()
	out, err := s.read(func(e wireEvent) bool { return e.Type == typ })
	if err != nil {
		t.Fatalf("before a %s event: %v", typ, err)
	}
	return out
}

// read reads events until stop says so, returning every event read.
func (s *sse) read(stop func(wireEvent) bool) ([]wireEvent, error) {
	var out []wireEvent
	for {
		fr, err := s.next()
		if err != nil {
			return out, fmt.Errorf("stream ended after %d events: %w", len(out), err)
		}
		e, err := fr.event()
		if err != nil {
			return out, err
		}
		out = append(out, e)
		if stop(e) {
			return out, nil
		}
	}
}

// waitIdle waits until the session's turn has ended.
func (f *fixture) waitIdle(id session.ID) {
	f.t.Helper()
	ended := testwait.For(10*time.Second, func() bool {
		var s serve.Session
		f.want(http.StatusOK, "GET", "/v1/sessions/"+string(id), "", &s)
		return !s.Running
	})
	if !ended {
		f.t.Fatal("the turn did not end")
	}
}

// events returns the session's logged events.
func (f *fixture) events(id session.ID) []session.Event {
	f.t.Helper()
	var out []session.Event
	for ev, err := range f.store.Events(context.Background(), id, 0) {
		if err != nil {
			f.t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// blocker is a tool whose calls wait until released (or cancelled).
type blocker struct {
	started chan string
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{started: make(chan string, 16), release: make(chan struct{})}
}

func (b *blocker) tool() tool.Tool {
	return tool.Func{
		ToolSpec: tool.Spec{Name: "wait", Description: "waits", Schema: json.RawMessage(`{"type":"object"}`), Annotations: &tool.Annotations{ReadOnly: true}},
		Fn: func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
			b.started <- string(call.ID)
			select {
			case <-b.release:
				return tool.Text("released"), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		},
	}
}
