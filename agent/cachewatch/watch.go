package cachewatch

import (
	"fmt"
	"sync"
	"time"

	"github.com/reinhq/rein/llm"
)

// Defaults of Options.
const (
	DefaultTTL   = 5 * time.Minute
	DefaultRatio = 0.8
	DefaultFloor = 1
)

// recheck is how many of the previous request's last messages are checked
// again even when the history slice is shared: a loop that derives its
// history may rewrite its newest message in place (tool results filling in
// a pending user message).
const recheck = 4

// Options configures a Watcher. A nil *Options is the default.
type Options struct {
	// TTL is the cache's time to live, used for ExpiresAt and to tell a
	// TTL expiry from an eviction. Zero means: an hour when the request's
	// Cache hint asks for an hour or more or the response wrote only
	// one-hour entries, else DefaultTTL (five minutes).
	TTL time.Duration
	// Floor is the absolute floor, in tokens, below which a read counts as
	// a break whenever the previous request had anything cached. Zero
	// means DefaultFloor (1): alone it only catches a total loss.
	Floor int64
	// Ratio is the share of the previous request's cached prefix
	// (read + write) the next response must read back. Zero means
	// DefaultRatio (0.8), whose slack absorbs tokenizer jitter; a negative
	// ratio leaves only Floor.
	Ratio float64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// SectionNames names system sections by index, for Section.Name and
	// the details of a drift ("rules", "skills", …).
	SectionNames []string
	// CheckAll checks every message's identity on every request instead of
	// trusting a history slice shared with the previous request. It costs a
	// few nanoseconds per message of history; turn it on only for a host
	// that overwrites old messages in place.
	CheckAll bool
}

// Watcher watches one conversation's prompt cache. Call Before with each
// request as it is sent and After with its response's usage. A Watcher is
// safe for concurrent use, though Before and After are meant to be called
// in order from one loop; ExpiresAt, Impact and Stats may be called from
// anywhere.
type Watcher struct {
	ttl      time.Duration
	floor    int64
	ratio    float64
	now      func() time.Time
	names    []string
	checkAll bool

	mu sync.Mutex
	x  hasher
	state
}

// state is what a Watcher learns; Reset zeroes it.
type state struct {
	// The previous request's fingerprint.
	seen      bool
	step      int
	model     string
	tools     []toolRec
	spare     []toolRec // the other tools buffer, swapped each request
	toolBytes int
	choice    llm.ToolChoice
	parallel  int8 // ParallelToolCalls: 0 unset, 1 false, 2 true
	system    []string
	sysBytes  int
	reasoning llm.ReasoningOptions
	thinking  bool
	msgs      []msgRec
	msgData   *llm.Message // req.Messages' backing array
	msgBytes  int

	// The request in flight, and the changes since the last response.
	inflight bool
	sentAt   time.Time
	reqTTL   time.Duration
	pending  *Diff

	// The cache as of the last response that reported usage.
	reported bool
	cached   int64 // read + write
	prompt   int64 // whole prompt tokens
	used     bool  // the cache was read or written at least once
	lastUse  time.Time
	useTTL   time.Duration

	stats Stats
}

// New returns a Watcher configured by opts (nil for the defaults).
func New(opts *Options) *Watcher {
	if opts == nil {
		opts = &Options{}
	}
	w := &Watcher{ttl: opts.TTL, floor: opts.Floor, ratio: opts.Ratio, now: opts.Now, names: opts.SectionNames, checkAll: opts.CheckAll}
	if w.floor <= 0 {
		w.floor = DefaultFloor
	}
	if w.ratio == 0 {
		w.ratio = DefaultRatio
	}
	if w.now == nil {
		w.now = time.Now
	}
	w.x.h.SetSeed(seed)
	return w
}

// Before fingerprints req, which is about to be sent, and compares it with
// the previous request. It returns a *Drift naming what changed, or nil
// when nothing that feeds the cache changed (appending messages is not a
// change) or when req is the first. It does not modify or keep req,
// though it keeps references into its messages to recognise them later
// (see the package doc for what may not be changed in place).
func (w *Watcher) Before(req *llm.Request) *Drift {
	if req == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.step++
	w.stats.Requests++
	w.inflight = true
	w.sentAt = w.now()
	w.reqTTL = w.requestTTL(req)

	first := !w.seen
	w.seen = true
	d := Diff{DivergedAt: -1}

	if !first && req.Model != w.model {
		d.add(DimModel, fmt.Sprintf("%q → %q", w.model, req.Model))
	}
	w.model = req.Model
	w.diffTools(req.Tools, &d)
	w.diffChoice(req, &d)
	w.diffSystem(req.System, &d)
	w.diffReasoning(req.Reasoning, &d)
	prevMsgs := len(w.msgs)
	w.diffMessages(req.Messages, &d)

	if first || len(d.Changed) == 0 {
		return nil
	}
	w.stats.Drifts++
	if w.pending == nil {
		w.pending = d.clone()
	} else {
		w.pending.merge(&d)
	}
	return &Drift{Step: w.step, Model: req.Model, Diff: d, Messages: len(req.Messages), PreviousMessages: prevMsgs}
}

func (w *Watcher) requestTTL(req *llm.Request) time.Duration {
	switch {
	case w.ttl > 0:
		return w.ttl
	case req.Cache != nil && req.Cache.TTL >= time.Hour:
		return time.Hour
	}
	return DefaultTTL
}

// After takes the usage of the response to the request last passed to
// Before and returns a *Break when it read materially less from the cache
// than the previous request had stored, or nil. A usage with no prompt
// tokens at all (a response that failed before reporting usage) is not
// judged and leaves the baseline as it was. Call After once per request
// that reached the provider; a request that failed before any response
// needs none, and its changes are carried to the next request's report.
func (w *Watcher) After(u llm.Usage) *Break {
	w.mu.Lock()
	defer w.mu.Unlock()
	prompt := u.PromptTokens()
	if prompt == 0 {
		return nil
	}
	sentAt, ttl := w.sentAt, w.reqTTL
	if !w.inflight {
		sentAt, ttl = w.now(), w.requestTTL(&llm.Request{})
	}
	if w.ttl == 0 && u.CacheWrite1h > 0 && u.CacheWrite5m == 0 {
		ttl = time.Hour
	}
	w.inflight = false
	diff := w.pending
	w.pending = nil
	w.stats.Input += u.Input
	w.stats.CacheRead += u.CacheRead
	w.stats.CacheWrite += u.CacheWrite

	var br *Break
	if w.reported && w.cached > 0 {
		expected := w.floor
		if w.ratio > 0 {
			expected = max(expected, int64(w.ratio*float64(w.cached)))
		}
		if u.CacheRead < expected {
			br = &Break{
				Step: w.step, Model: w.model,
				CacheRead: u.CacheRead, CacheWrite: u.CacheWrite,
				Expected: expected,
				Rebilled: max(w.cached-u.CacheRead, 0),
				Pause:    sentAt.Sub(w.lastUse),
				TTL:      w.useTTL,
			}
			if diff != nil {
				br.Diff = *diff
			} else {
				br.Diff = Diff{DivergedAt: -1}
			}
			switch {
			case br.Pause > br.TTL:
				br.Cause = CauseTTL
			case len(br.Changed) > 0:
				br.Cause = CauseChange
			default:
				br.Cause = CauseEviction
			}
			w.stats.Breaks++
			w.stats.Rebilled += br.Rebilled
		} else if diff != nil {
			w.stats.Absorbed++
		}
	}
	w.reported = true
	w.cached = u.CacheRead + u.CacheWrite
	w.prompt = prompt
	if w.cached > 0 {
		w.used, w.lastUse, w.useTTL = true, sentAt, ttl
	}
	return br
}

// Stats returns the totals so far.
func (w *Watcher) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.stats
}

// Reset forgets everything, for a conversation that starts over. The next
// request is a first one again.
func (w *Watcher) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.state = state{}
}
