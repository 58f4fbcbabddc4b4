package llmtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
)

// maxBody bounds a request body the server reads.
const maxBody = 64 << 20

// RawRequest is one HTTP request as the Server received it.
type RawRequest struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// ServerOptions configures a Server. The zero value is the default.
type ServerOptions struct {
	// MinCacheTokens is the shortest prefix, in estimated tokens (bytes/4),
	// the simulated prompt cache stores. Zero means 1024.
	MinCacheTokens int
	// Now is the cache's clock; nil means time.Now.
	Now func() time.Time
	// NoCache turns the prompt-cache simulation off: usage is always the
	// script's.
	NoCache bool
}

// Server is a fake model provider: an httptest server that plays a
// Model's script over real wire formats, chosen by the request path:
//
//   - POST …/v1/messages: the Anthropic Messages API, streamed as
//     server-sent events (message_start, content_block_start/delta/stop
//     with text_delta, thinking_delta, signature_delta and
//     input_json_delta, message_delta with stop_reason and usage,
//     message_stop; an "error" event for a failure after HTTP 200).
//     POST …/v1/messages/count_tokens answers with an estimate.
//   - POST …/v1/chat/completions and …/chat/completions: OpenAI Chat
//     Completions, streamed as "data:" lines (choices[].delta with
//     content, reasoning_content and tool_calls by index, a final chunk
//     with finish_reason, a usage chunk when stream_options.include_usage
//     is set, then "data: [DONE]"; a {"error": …} line for a failure
//     after HTTP 200).
//
// Each request body is decoded into an *llm.Request (model, system,
// messages, tools, tool choice, sampling, reasoning, cache hints) that the
// script's Respond entries see and Model.Requests returns; Server.Requests
// returns the raw bodies and headers.
//
// Faults become what the provider would send:
//
//   - Fail(&llm.ProviderError{Kind: k, …}) answers with the provider's
//     HTTP status and error JSON for k — rate-limited 429; overloaded 529
//     (Anthropic) or 503 (OpenAI); server 500 (or the error's own 5xx,
//     408 or 409 status); timeout 504; quota 400 "billing_error"
//     (Anthropic) or 429 "insufficient_quota" (OpenAI); auth 401;
//     context-too-long 400 with each provider's real message; invalid 400
//     — with retry-after and retry-after-ms headers when RetryAfter is set
//     and the error's RequestID (or a generated one) in the request-id
//     header. A transport kind closes the connection without an answer.
//     Any other error is a 500.
//   - FailAfter sends HTTP 200, the chunks, then the wire's error event.
//   - Cut sends the chunks and closes the connection without finishing the
//     response, so the client sees a truncated stream.
//   - Hang and HangAfter hold the connection until the client goes away
//     (or the server closes). WithDelay delays the response headers.
//   - An exhausted script answers 500 with the exhaustion message.
//
// A request without "stream": true gets the whole response as one JSON
// body, as the provider would send it.
//
// The server simulates the providers' prompt caches (see ServerOptions):
// a request reads from the cache the longest prefix — tools, then system,
// then messages, compared byte for byte — that an earlier request wrote,
// and writes the rest up to its last cache breakpoint. Anthropic
// breakpoints are the cache_control markers, with their 5m or 1h TTL;
// OpenAI caches every prompt automatically. Prefixes shorter than
// MinCacheTokens are not cached. The result is reported in the wire's
// usage fields (Anthropic cache_read_input_tokens and
// cache_creation_input_tokens with the ephemeral 5m/1h split, OpenAI
// prompt_tokens_details.cached_tokens) whenever the script's entry does
// not set its usage itself and the request reads or writes the cache.
//
// The server is closed by Close or when the test ends.
type Server struct {
	// URL is the base URL, for example http://127.0.0.1:34567; point an
	// adapter's BaseURL at it (an OpenAI adapter may use URL + "/v1").
	URL string

	t      testing.TB
	m      *Model
	srv    *httptest.Server
	ctx    context.Context
	cancel context.CancelFunc
	once   sync.Once
	seq    atomic.Int64

	mu    sync.Mutex
	reqs  []RawRequest
	cache *promptCache
}

// NewServer starts a fake provider serving m's script with default
// options. It is closed when the test ends; t may be nil outside a test,
// and then the caller must call Close.
func NewServer(t testing.TB, m *Model) *Server {
	return NewServerWithOptions(t, m, nil)
}

// NewServerWithOptions starts a fake provider serving m's script.
func NewServerWithOptions(t testing.TB, m *Model, opts *ServerOptions) *Server {
	if opts == nil {
		opts = &ServerOptions{}
	}
	s := &Server{t: t, m: m}
	if !opts.NoCache {
		s.cache = newPromptCache(opts.MinCacheTokens, opts.Now)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	// Requests derive from s.ctx, so Close ends hanging handlers.
	s.srv.Config.BaseContext = func(net.Listener) context.Context { return s.ctx }
	s.srv.Start()
	s.URL = s.srv.URL
	if t != nil {
		t.Cleanup(s.Close)
	}
	return s
}

// Close ends any hanging response and shuts the server down. It is
// idempotent.
func (s *Server) Close() {
	s.once.Do(func() {
		s.cancel()
		s.srv.CloseClientConnections()
		s.srv.Close()
	})
}

// Client returns an HTTP client for the server.
func (s *Server) Client() *http.Client { return s.srv.Client() }

// Requests returns every HTTP request received so far, in order.
func (s *Server) Requests() []RawRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]RawRequest, len(s.reqs))
	for i, r := range s.reqs {
		r.Header = r.Header.Clone()
		r.Body = append([]byte(nil), r.Body...)
		out[i] = r
	}
	return out
}

// wire is one provider's protocol.
type wire interface {
	name() string
	// decode turns a request body into an llm.Request.
	decode(body []byte) (*decoded, error)
	// writeError sends an HTTP error response for err.
	writeError(w http.ResponseWriter, id string, err error)
	// writeWhole sends a complete, non-streamed 200 response.
	writeWhole(w http.ResponseWriter, d *decoded, e Entry, res *llm.Response, id string)
	// newStream starts rendering e as a 200 event stream; the caller
	// feeds it the chunks and handles the entry's ending.
	newStream(w http.ResponseWriter, flush func(), d *decoded, e Entry, id string) streamWriter
}

// streamWriter renders chunks on one response.
type streamWriter interface {
	start() error
	chunk(c llm.Chunk) error
	fail(err error) error
	// finished reports whether a Finish has been rendered.
	finished() bool
}

// decoded is a request in llm terms plus what only the wire knows.
type decoded struct {
	req          *llm.Request
	stream       bool
	includeUsage bool
	autoCache    bool // the provider caches prefixes without breakpoints
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		http.Error(w, "llmtest: reading the request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, RawRequest{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	s.mu.Unlock()

	var wr wire
	path := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case strings.HasSuffix(path, "/v1/messages/count_tokens"):
		s.countTokens(w, r, body)
		return
	case strings.HasSuffix(path, "/v1/messages"):
		wr = anthropicWire{}
	case strings.HasSuffix(path, "/chat/completions"):
		wr = openaiWire{}
	default:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"not_found_error","message":%q}}`,
			"llmtest: no endpoint at "+r.URL.Path+"; use /v1/messages (Anthropic) or /v1/chat/completions (OpenAI)")
		return
	}
	id := fmt.Sprintf("req_llmtest_%d", s.seq.Add(1))
	if r.Method != http.MethodPost {
		wr.writeError(w, id, &llm.ProviderError{Kind: llm.ErrInvalidRequest, StatusCode: http.StatusMethodNotAllowed, Message: "llmtest: use POST"})
		return
	}
	d, err := wr.decode(body)
	if err != nil {
		wr.writeError(w, id, &llm.ProviderError{Kind: llm.ErrInvalidRequest, Message: "llmtest: cannot decode the " + wr.name() + " request: " + err.Error()})
		return
	}
	e, err := s.m.take(d.req)
	if err != nil {
		if s.t != nil {
			s.t.Logf("llmtest server: %v", err)
		}
		wr.writeError(w, id, &llm.ProviderError{Kind: llm.ErrServer, StatusCode: http.StatusInternalServerError, Message: err.Error()})
		return
	}
	defer s.m.release()
	if s.cache != nil && !e.usageSet {
		if u, ok := s.cache.apply(d); ok {
			e = e.withCacheUsage(u)
		}
	}
	ctx := r.Context()
	if e.delay > 0 {
		if sleep(ctx, e.delay) != nil {
			return
		}
	}
	if !d.stream {
		s.whole(ctx, w, wr, d, e, id)
		return
	}
	if len(e.chunks) == 0 && e.end == endFail {
		if isTransport(e.err) {
			hangUp(w)
			return
		}
		wr.writeError(w, e.requestID(id), e.err)
		return
	}

	flusher, _ := w.(http.Flusher)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	sw := wr.newStream(w, flush, d, e, id)
	if sw.start() != nil {
		return
	}
	for _, c := range e.chunks {
		if ctx.Err() != nil {
			return
		}
		if sw.finished() {
			break // nothing follows a finish on the wire
		}
		if sw.chunk(c) != nil {
			return
		}
	}
	switch e.end {
	case endHang:
		<-ctx.Done()
	case endFail:
		if isTransport(e.err) {
			hangUp(w)
			return
		}
		_ = sw.fail(e.err)
	default:
		if !sw.finished() {
			hangUp(w) // Cut: drop the connection mid-stream
		}
	}
}

// whole answers a request that did not ask for a stream with the whole
// response in one JSON body. Nothing is sent before the response is
// complete, so a failure after chunks is an HTTP error too.
func (s *Server) whole(ctx context.Context, w http.ResponseWriter, wr wire, d *decoded, e Entry, id string) {
	var a llm.Assembler
	for _, c := range e.chunks {
		a.Add(c)
	}
	switch {
	case e.end == endHang:
		<-ctx.Done()
	case e.end == endFail && isTransport(e.err):
		hangUp(w)
	case e.end == endFail:
		wr.writeError(w, e.requestID(id), e.err)
	case !a.Finished():
		hangUp(w) // Cut
	default:
		wr.writeWhole(w, d, e, a.Response(), id)
	}
}

// hangUp closes the connection under w without completing the response.
func hangUp(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = buf.Flush()
	_ = conn.Close()
}

func isTransport(err error) bool {
	var pe *llm.ProviderError
	return errors.As(err, &pe) && pe.Kind == llm.ErrTransport
}

// requestID is the id to send for the entry's error: its own when set.
func (e Entry) requestID(fallback string) string {
	var pe *llm.ProviderError
	if errors.As(e.err, &pe) && pe.RequestID != "" {
		return pe.RequestID
	}
	return fallback
}

// withCacheUsage returns e with its usage replaced by u's cache figures.
func (e Entry) withCacheUsage(u llm.Usage) Entry {
	base, _ := e.usage()
	base.Input = u.Input
	base.CacheRead = u.CacheRead
	base.CacheWrite = u.CacheWrite
	base.CacheWrite5m = u.CacheWrite5m
	base.CacheWrite1h = u.CacheWrite1h
	set := e.usageSet
	e = e.WithUsage(base)
	e.usageSet = set
	return e
}

func (s *Server) countTokens(w http.ResponseWriter, r *http.Request, body []byte) {
	d, err := anthropicWire{}.decode(body)
	if err != nil {
		anthropicWire{}.writeError(w, "req_llmtest_count", &llm.ProviderError{Kind: llm.ErrInvalidRequest, Message: "llmtest: cannot decode the request: " + err.Error()})
		return
	}
	n := 0
	for _, seg := range segments(d.req) {
		n += len(seg.data)
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"input_tokens":%d}`, estimateTokens(n))
}

// providerError returns err as a *llm.ProviderError, wrapping a plain
// error as a server error.
func providerError(err error) *llm.ProviderError {
	var pe *llm.ProviderError
	if errors.As(err, &pe) {
		return pe
	}
	msg := "llmtest: scripted failure"
	if err != nil {
		msg = err.Error()
	}
	return &llm.ProviderError{Kind: llm.ErrServer, Message: msg}
}

// setErrorHeaders writes the request id and retry-after headers.
func setErrorHeaders(h http.Header, idHeader, id string, pe *llm.ProviderError) {
	h.Set("Content-Type", "application/json")
	h.Set(idHeader, id)
	if pe.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(pe.RetryAfter.Seconds()))))
		h.Set("Retry-After-Ms", strconv.FormatInt(pe.RetryAfter.Milliseconds(), 10))
	}
}

// statusFor returns the error's own status where the kind allows several.
func statusFor(pe *llm.ProviderError, def int) int {
	if pe.Kind == llm.ErrServer || pe.Kind == llm.ErrInvalidRequest {
		if pe.StatusCode >= 400 {
			return pe.StatusCode
		}
	}
	return def
}

// sse writes one server-sent event and flushes it.
type sse struct {
	w     *bufio.Writer
	flush func()
}

func (s *sse) event(name string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if name != "" {
		s.w.WriteString("event: ")
		s.w.WriteString(name)
		s.w.WriteByte('\n')
	}
	s.w.WriteString("data: ")
	s.w.Write(data)
	s.w.WriteString("\n\n")
	if err := s.w.Flush(); err != nil {
		return err
	}
	s.flush()
	return nil
}

func (s *sse) raw(line string) error {
	s.w.WriteString(line)
	if err := s.w.Flush(); err != nil {
		return err
	}
	s.flush()
	return nil
}

// lookAhead finds the id and name of the tool call in block index, and
// the redacted data of a reasoning block, wherever the script put them.
func lookAhead(chunks []llm.Chunk, index int) (id llm.CallID, name, redacted string) {
	for _, c := range chunks {
		switch c := c.(type) {
		case *llm.BlockStart:
			if c.Index == index {
				id, name = first(id, c.ID), firstS(name, c.Name)
			}
		case *llm.ToolCallDelta:
			if c.Index == index {
				id, name = first(id, c.ID), firstS(name, c.Name)
			}
		case *llm.ReasoningDelta:
			if c.Index == index && redacted == "" {
				redacted = c.Redacted
			}
		}
	}
	return id, name, redacted
}

func first(a, b llm.CallID) llm.CallID {
	if a != "" {
		return a
	}
	return b
}

func firstS(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// finishModel is the model a response names: the Finish provenance's
// when the script set one, else the request's.
func finishModel(e Entry, req *llm.Request) string {
	for _, c := range e.chunks {
		if f, ok := c.(*llm.Finish); ok && f.Provenance != nil && f.Provenance.Model != "" {
			return f.Provenance.Model
		}
	}
	return req.Model
}
