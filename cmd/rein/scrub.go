package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"iter"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool/exec"
)

// minSecret is the shortest value treated as a secret: shorter ones
// would redact ordinary words.
const minSecret = 8

const redacted = "[redacted]"

// scrubber is the last line of defence for secrets: every secret rein
// knows (provider keys, MCP headers and credentials, variables whose
// names look like credentials) is replaced, in every form it could take
// on the way out (as is, JSON-escaped, URL-encoded, inside base64), in
// whatever rein prints (stdout, stderr: --json, exports, errors) and in
// every event a session store receives or yields. Tools should never
// see a secret in the first place; this catches what slips through.
type scrubber struct {
	mu      sync.RWMutex
	secrets map[string]bool
	forms   [][]byte // longest first
}

func newScrubber() *scrubber { return &scrubber{secrets: make(map[string]bool)} }

// add learns a secret.
func (s *scrubber) add(secret string) {
	secret = strings.TrimSpace(secret)
	if len(secret) < minSecret {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.secrets[secret] {
		return
	}
	s.secrets[secret] = true
	for _, f := range secretForms(secret) {
		if len(f) >= minSecret && !slices.ContainsFunc(s.forms, func(b []byte) bool { return string(b) == f }) {
			s.forms = append(s.forms, []byte(f))
		}
	}
	slices.SortFunc(s.forms, func(a, b []byte) int { return len(b) - len(a) })
}

// list returns the secrets, for the shell to withhold.
func (s *scrubber) list() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]string, 0, len(s.secrets))
	for k := range s.secrets {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// secretForms are the spellings of a secret to look for.
func secretForms(v string) []string {
	forms := []string{v, url.QueryEscape(v), url.PathEscape(v)}
	if b, err := json.Marshal(v); err == nil {
		forms = append(forms, string(b[1:len(b)-1]))
	}
	// Inside a longer base64 text the secret may start at any of three
	// byte offsets; each gives a run of characters that only the secret
	// determines.
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for k := range 3 {
			full := enc.EncodeToString(append(make([]byte, k), v...))
			from := (8*k + 5) / 6
			to := 8 * (k + len(v)) / 6
			forms = append(forms, full[from:to])
		}
	}
	return forms
}

// scrub returns b with every secret replaced; b itself when it holds
// none.
func (s *scrubber) scrub(b []byte) []byte {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, f := range s.forms {
		if bytes.Contains(b, f) {
			b = bytes.ReplaceAll(b, f, []byte(redacted))
		}
	}
	return b
}

// partial is the length of the longest end of b that begins a secret
// form: what a writer must hold back until the next write shows
// whether the secret follows.
func (s *scrubber) partial(b []byte) int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	hold := 0
	for _, f := range s.forms {
		for k := min(len(f)-1, len(b)); k > hold; k-- {
			if bytes.HasSuffix(b, f[:k]) {
				hold = k
				break
			}
		}
	}
	return hold
}

// learnEnv learns the values of rein's environment variables whose
// names look like credentials.
func (s *scrubber) learnEnv() {
	for _, kv := range os.Environ() {
		if name, v, ok := strings.Cut(kv, "="); ok && exec.CredentialName(name) {
			s.add(v)
		}
	}
}

// learnHeader learns an HTTP header value and, for "Scheme token", the
// token.
func (s *scrubber) learnHeader(v string) {
	s.add(v)
	if _, tok, ok := strings.Cut(v, " "); ok {
		s.add(tok)
	}
}

// scrubWriter scrubs what passes through it. It holds back only an end
// of the output that could begin a secret, until the next write or
// Flush shows what follows, so streamed text flows as it comes.
type scrubWriter struct {
	s       *scrubber
	w       io.Writer
	mu      sync.Mutex
	pending []byte
}

func (s *scrubber) writer(w io.Writer) *scrubWriter { return &scrubWriter{s: s, w: w} }

func (sw *scrubWriter) Write(p []byte) (int, error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	buf := sw.s.scrub(append(sw.pending, p...))
	hold := sw.s.partial(buf)
	out := buf[:len(buf)-hold]
	sw.pending = append([]byte(nil), buf[len(buf)-hold:]...)
	if _, err := sw.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what is held back.
func (sw *scrubWriter) Flush() error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if len(sw.pending) == 0 {
		return nil
	}
	_, err := sw.w.Write(sw.s.scrub(sw.pending))
	sw.pending = nil
	return err
}

// scrubStore scrubs every event written to or read from a store, so the
// log, its exports and whatever is built from them hold no secret, even
// one logged before the scrubber knew it.
type scrubStore struct {
	session.Store
	s *scrubber
}

func (st *scrubStore) Append(ctx context.Context, id session.ID, events ...session.Event) error {
	for i := range events {
		events[i] = st.s.event(events[i])
	}
	return st.Store.Append(ctx, id, events...)
}

func (st *scrubStore) Events(ctx context.Context, id session.ID, afterSeq int64) iter.Seq2[session.Event, error] {
	return func(yield func(session.Event, error) bool) {
		for e, err := range st.Store.Events(ctx, id, afterSeq) {
			if err == nil {
				e = st.s.event(e)
			}
			if !yield(e, err) {
				return
			}
		}
	}
}

// scrubbed wraps st, keeping the optional interfaces it implements
// (Notifier, and Path for hook commands that read the log file).
func (s *scrubber) scrubbed(st session.Store) session.Store {
	base := &scrubStore{Store: st, s: s}
	n, notifies := st.(session.Notifier)
	p, paths := st.(pather)
	switch {
	case notifies && paths:
		return &struct {
			*scrubStore
			session.Notifier
			pather
		}{base, n, p}
	case notifies:
		return &struct {
			*scrubStore
			session.Notifier
		}{base, n}
	case paths:
		return &struct {
			*scrubStore
			pather
		}{base, p}
	}
	return base
}

type pather interface{ Path(session.ID) string }

// event returns e, or a copy of it with its secrets replaced.
func (s *scrubber) event(e session.Event) session.Event {
	b, err := session.AppendEventJSON(nil, e)
	if err != nil {
		return e
	}
	clean := s.scrub(b)
	if len(clean) == len(b) && bytes.Equal(clean, b) {
		return e
	}
	if ne, err := session.DecodeEvent(clean); err == nil {
		return ne
	}
	e.Data = &session.Unknown{Type: e.Data.EventType(), Raw: json.RawMessage(`{"scrubbed":true}`)}
	return e
}
