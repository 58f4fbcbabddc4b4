package llmtest

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/reinhq/rein/llm"
)

// CannedServer is a lean fake provider for benchmarks of long sessions.
// It renders a script's entries once, to the bytes Server would stream
// for them, and answers the k-th POST with entry k modulo the script's
// length. It reads and discards each request body and keeps only its
// length, so what it costs per request is the HTTP exchange alone, however
// long the history grows. The path picks the wire as with Server.
//
// The server is closed by Close or when the test ends.
type CannedServer struct {
	// URL is the base URL; point an adapter's BaseURL at it.
	URL string

	srv     *httptest.Server
	streams map[string][][]byte // by wire name, one body per entry
	next    atomic.Int64

	mu      sync.Mutex
	lengths []int
}

// NewCannedServer starts a CannedServer playing entries, whose responses
// name model. Only entries that stream to a finish may be canned (Reply,
// CallTool, CallTools, Chunks ending in a Finish); anything else is an
// error that says so. t may be nil outside a test, and then the caller
// must call Close.
func NewCannedServer(t testing.TB, model string, entries ...Entry) (*CannedServer, error) {
	if len(entries) == 0 {
		return nil, errors.New("llmtest: NewCannedServer needs at least one entry")
	}
	s := &CannedServer{streams: map[string][][]byte{}}
	for _, wr := range []wire{anthropicWire{}, openaiWire{}} {
		for i, e := range entries {
			body, err := render(wr, model, e, fmt.Sprintf("req_canned_%d", i+1))
			if err != nil {
				return nil, fmt.Errorf("llmtest: canned entry %d: %w", i, err)
			}
			s.streams[wr.name()] = append(s.streams[wr.name()], body)
		}
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	if t != nil {
		t.Cleanup(s.Close)
	}
	return s, nil
}

// render returns the event stream wr sends for e.
func render(wr wire, model string, e Entry, id string) ([]byte, error) {
	if e.respond != nil || e.end != endDone || e.delay > 0 {
		return nil, errors.New("only entries that stream to a finish can be canned; use Server for failures, hangs, cuts and Respond")
	}
	rec := httptest.NewRecorder()
	d := &decoded{req: &llm.Request{Model: model}, stream: true, includeUsage: true}
	sw := wr.newStream(rec, func() {}, d, e, id)
	if err := sw.start(); err != nil {
		return nil, err
	}
	for _, c := range e.chunks {
		if sw.finished() {
			break
		}
		if err := sw.chunk(c); err != nil {
			return nil, err
		}
	}
	if !sw.finished() {
		return nil, errors.New("the entry has no Finish chunk")
	}
	return rec.Body.Bytes(), nil
}

// Close shuts the server down. It is idempotent.
func (s *CannedServer) Close() { s.srv.Close() }

// Client returns an HTTP client for the server.
func (s *CannedServer) Client() *http.Client { return s.srv.Client() }

// Lengths returns the lengths of the request bodies received so far, in
// order, and forgets them.
func (s *CannedServer) Lengths() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.lengths
	s.lengths = nil
	return out
}

func (s *CannedServer) serve(w http.ResponseWriter, r *http.Request) {
	n, err := io.Copy(io.Discard, r.Body)
	if err != nil {
		http.Error(w, "llmtest: reading the request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.lengths = append(s.lengths, int(n))
	s.mu.Unlock()
	var bodies [][]byte
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case strings.HasSuffix(path, "/v1/messages"):
		bodies = s.streams[anthropicWire{}.name()]
	case strings.HasSuffix(path, "/chat/completions"):
		bodies = s.streams[openaiWire{}.name()]
	default:
		http.Error(w, "llmtest: no endpoint at "+r.URL.Path+"; use /v1/messages (Anthropic) or /v1/chat/completions (OpenAI)", http.StatusNotFound)
		return
	}
	k := s.next.Add(1) - 1
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Request-Id", "req_canned")
	w.WriteHeader(http.StatusOK)
	w.Write(bodies[k%int64(len(bodies))])
}
