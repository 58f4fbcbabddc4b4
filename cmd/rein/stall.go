package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/reinhq/rein/llm"
)

// Defaults of the provider connection's timeouts.
const (
	defaultStallTimeout   = 60 * time.Second
	defaultConnectTimeout = 10 * time.Second
	// refusedRetryDelay is the one quick retry of a refused connection:
	// long enough for a local server that is just starting, short enough
	// that a dead endpoint is reported at once.
	refusedRetryDelay = 300 * time.Millisecond
)

// netOptions are the --stall-timeout and --connect-timeout flags.
type netOptions struct {
	stall, connect time.Duration
}

// providerClient is the HTTP client of the provider adapters: connects
// time out after connect, a refused connection is tried once more after a
// short pause, and a response that sends no bytes for stall (before its
// headers or in mid-stream) fails with a timeout the retry policy retries.
func providerClient(o netOptions) *http.Client {
	if o.stall <= 0 {
		o.stall = defaultStallTimeout
	}
	if o.connect <= 0 {
		o.connect = defaultConnectTimeout
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Timeout: o.connect, KeepAlive: 30 * time.Second}).DialContext
	return &http.Client{Transport: &stallTransport{base: tr, stall: o.stall}}
}

// errStalled is a provider that stopped sending. It reports itself as a
// timeout so the adapters classify it as one, which is retried.
type errStalled struct {
	after time.Duration
}

func (e *errStalled) Error() string {
	return fmt.Sprintf("the provider sent nothing for %s; the stream was abandoned (raise --stall-timeout if the model is slow to start)", e.after)
}

// Timeout reports true: a stall is a timeout.
func (e *errStalled) Timeout() bool { return true }

// Temporary reports true: a stall may not happen again.
func (e *errStalled) Temporary() bool { return true }

// stallTransport abandons a request that goes quiet for longer than stall.
type stallTransport struct {
	base  http.RoundTripper
	stall time.Duration
}

func (t *stallTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.roundTrip(req)
	if err != nil && isRefused(err) && req.GetBody != nil {
		select {
		case <-time.After(refusedRetryDelay):
		case <-req.Context().Done():
			return nil, err
		}
		body, gerr := req.GetBody()
		if gerr != nil {
			return nil, err
		}
		again := req.Clone(req.Context())
		again.Body = body
		resp, err = t.roundTrip(again)
	}
	return resp, err
}

func (t *stallTransport) roundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	var stalled atomic.Bool
	timer := time.AfterFunc(t.stall, func() {
		stalled.Store(true)
		cancel()
	})
	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		timer.Stop()
		cancel()
		if stalled.Load() {
			return nil, &errStalled{after: t.stall}
		}
		return nil, err
	}
	timer.Reset(t.stall)
	resp.Body = &stallBody{body: resp.Body, timer: timer, cancel: cancel, stalled: &stalled, after: t.stall}
	return resp, nil
}

// stallBody restarts the stall timer on every read that brings bytes.
type stallBody struct {
	body    io.ReadCloser
	timer   *time.Timer
	cancel  context.CancelFunc
	stalled *atomic.Bool
	after   time.Duration
}

func (b *stallBody) Read(p []byte) (int, error) {
	n, err := b.body.Read(p)
	if n > 0 && err == nil {
		b.timer.Reset(b.after)
	}
	if err != nil {
		if b.stalled.Load() {
			return n, &errStalled{after: b.after}
		}
		b.timer.Stop()
	}
	return n, err
}

func (b *stallBody) Close() error {
	b.timer.Stop()
	err := b.body.Close()
	b.cancel()
	return err
}

// isRefused reports whether err is a refused connection.
func isRefused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED)
}

// unreachable is a provider that refused the connection even after the
// transport's quick retry: reported at once rather than retried with
// backoff, since nothing listens there.
type unreachable struct {
	err error
}

func (e *unreachable) Error() string {
	return e.err.Error() + "; is the server running, and is --base-url right?"
}

func (e *unreachable) Unwrap() error { return e.err }

// failFast makes a refused connection end the model call at once: the
// error no longer reads as a retryable provider error, so the retry policy
// leaves it alone (a fallback model is still tried).
func failFast(m llm.Model) llm.Model {
	f := fastModel{m}
	if tc, ok := m.(llm.TokenCounter); ok {
		return &fastCounter{fastModel: f, TokenCounter: tc}
	}
	return &f
}

type fastModel struct{ m llm.Model }

func (f *fastModel) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		for c, err := range f.m.Stream(ctx, req) {
			if err != nil && isRefused(err) {
				var pe *llm.ProviderError
				if errors.As(err, &pe) {
					err = &unreachable{err: errors.New(pe.Error())}
				}
			}
			if !yield(c, err) {
				return
			}
		}
	}
}

type fastCounter struct {
	fastModel
	llm.TokenCounter
}
