package cachewatch

import (
	"fmt"
	"strings"
	"sync"
	"time"
	"unsafe"

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

func (w *Watcher) diffTools(tools []llm.ToolSpec, d *Diff) {
	old := w.tools
	next := w.spare[:0]
	changed := len(tools) != len(old)
	w.toolBytes = 0
	for i := range tools {
		t := &tools[i]
		if i < len(old) && old[i].same(t) {
			next = append(next, old[i])
			w.toolBytes += old[i].size
			continue
		}
		h, n := w.x.tool(t)
		next = append(next, toolRec{name: t.Name, desc: t.Description, schema: unsafe.SliceData(t.Schema), slen: len(t.Schema), hash: h, size: n})
		w.toolBytes += n
		if i >= len(old) || old[i].hash != h {
			changed = true
		}
	}
	if changed && w.step > 1 {
		d.add(DimTools, toolsDetail(old, next))
	}
	clear(old) // release the previous request's schemas
	w.tools, w.spare = next, old[:0]
}

// toolsDetail says which tools were added, removed or changed.
func toolsDetail(old, next []toolRec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d → %d tools", len(old), len(next))
	byName := func(rs []toolRec) map[string]uint64 {
		m := make(map[string]uint64, len(rs))
		for _, r := range rs {
			m[r.name] = r.hash
		}
		return m
	}
	om, nm := byName(old), byName(next)
	var added, removed, changed []string
	for _, r := range next {
		if h, ok := om[r.name]; !ok {
			added = append(added, r.name)
		} else if h != r.hash {
			changed = append(changed, r.name)
		}
	}
	for _, r := range old {
		if _, ok := nm[r.name]; !ok {
			removed = append(removed, r.name)
		}
	}
	list := func(label string, names []string) {
		if len(names) > 0 {
			fmt.Fprintf(&b, "; %s %s", label, strings.Join(names, ", "))
		}
	}
	list("added", added)
	list("removed", removed)
	list("changed", changed)
	if len(added)+len(removed)+len(changed) == 0 {
		b.WriteString("; reordered")
	}
	return b.String()
}

func (w *Watcher) diffChoice(req *llm.Request, d *Diff) {
	var par int8
	if p := req.ParallelToolCalls; p != nil {
		par = 1
		if *p {
			par = 2
		}
	}
	if w.step > 1 && (req.ToolChoice != w.choice || par != w.parallel) {
		d.add(DimToolChoice, fmt.Sprintf("%s → %s", choiceString(w.choice, w.parallel), choiceString(req.ToolChoice, par)))
	}
	w.choice, w.parallel = req.ToolChoice, par
}

func choiceString(c llm.ToolChoice, par int8) string {
	s := string(c.Mode)
	if s == "" {
		s = "auto"
	}
	if c.Name != "" {
		s += " " + c.Name
	}
	switch par {
	case 1:
		s += ", no parallel calls"
	case 2:
		s += ", parallel calls"
	}
	return s
}

func (w *Watcher) section(i int) Section {
	s := Section{Index: i}
	if i < len(w.names) {
		s.Name = w.names[i]
	}
	return s
}

func (w *Watcher) diffSystem(sys []llm.Text, d *Diff) {
	old := w.system
	var details []string
	for i := range max(len(sys), len(old)) {
		if w.step == 1 {
			break // nothing to compare with
		}
		var what string
		switch {
		case i >= len(old):
			what = fmt.Sprintf("added (%d bytes)", len(sys[i].Text))
		case i >= len(sys):
			what = fmt.Sprintf("removed (%d bytes)", len(old[i]))
		case sys[i].Text != old[i]: // strings are immutable: equal pointers compare at once
			what = fmt.Sprintf("changed (%d → %d bytes)", len(old[i]), len(sys[i].Text))
		default:
			continue
		}
		s := w.section(i)
		d.Sections = append(d.Sections, s)
		label := fmt.Sprintf("section %d", i)
		if s.Name != "" {
			label += " " + s.Name
		}
		details = append(details, label+" "+what)
	}
	if len(details) > 0 {
		d.add(DimSystem, strings.Join(details, "; "))
	}
	w.sysBytes = 0
	w.system = w.system[:0]
	for i := range sys {
		w.system = append(w.system, sys[i].Text)
		w.sysBytes += len(sys[i].Text)
	}
	clear(w.system[len(w.system):cap(w.system)])
}

func (w *Watcher) diffReasoning(r *llm.ReasoningOptions, d *Diff) {
	var next llm.ReasoningOptions
	on := r != nil
	if on {
		next = *r
	}
	if w.step > 1 && (on != w.thinking || next != w.reasoning) {
		d.add(DimReasoning, reasoningString(w.thinking, w.reasoning)+" → "+reasoningString(on, next))
	}
	w.thinking, w.reasoning = on, next
}

func reasoningString(on bool, r llm.ReasoningOptions) string {
	if !on {
		return "off"
	}
	var parts []string
	if r.Effort != "" {
		parts = append(parts, "effort "+r.Effort)
	}
	if r.BudgetTokens != 0 {
		parts = append(parts, fmt.Sprintf("budget %d", r.BudgetTokens))
	}
	if r.Summary != "" {
		parts = append(parts, "summary "+r.Summary)
	}
	if len(parts) == 0 {
		return "provider default"
	}
	return strings.Join(parts, ", ")
}

// diffMessages brings w.msgs up to msgs, hashing only messages it has not
// seen, and records where msgs diverged from the previous request.
func (w *Watcher) diffMessages(msgs []llm.Message, d *Diff) {
	prev := len(w.msgs)
	n := len(msgs)
	shared := min(n, prev)
	start := 0
	data := unsafe.SliceData(msgs)
	if !w.checkAll && data != nil && data == w.msgData {
		// Same backing array: only the newest messages can have been
		// rewritten by an appending loop.
		start = max(shared-recheck, 0)
	}
	diverged := -1
	tail := max(prev-recheck, 0)
	for i := start; i < shared; i++ {
		m := &msgs[i]
		r := &w.msgs[i]
		if r.same(m, i >= tail) {
			continue
		}
		h, size := w.x.message(m)
		if h != r.hash && diverged < 0 {
			diverged = i
		}
		w.msgBytes += size - r.size
		*r = newMsgRec(m, h, size)
	}
	if n < prev {
		if diverged < 0 {
			diverged = n
		}
		for _, r := range w.msgs[n:] {
			w.msgBytes -= r.size
		}
		clear(w.msgs[n:])
		w.msgs = w.msgs[:n]
	}
	for i := prev; i < n; i++ {
		m := &msgs[i]
		h, size := w.x.message(m)
		w.msgs = append(w.msgs, newMsgRec(m, h, size))
		w.msgBytes += size
	}
	w.msgData = data
	if diverged >= 0 && w.step > 1 {
		d.DivergedAt = diverged
		var detail string
		if diverged == n {
			detail = fmt.Sprintf("history cut from %d to %d messages", prev, n)
		} else {
			detail = fmt.Sprintf("message %d (%s) of %d rewritten", diverged, msgs[diverged].Role, prev)
			if n != prev {
				detail += fmt.Sprintf("; now %d messages", n)
			}
		}
		d.add(DimMessagePrefix, detail)
	}
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

// ExpiresAt estimates when the conversation's cache entry expires: the
// last request that read or wrote the cache plus the TTL it used. Each
// read refreshes the entry. ok is false before any response used the
// cache. The provider may evict earlier.
func (w *Watcher) ExpiresAt() (t time.Time, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.used {
		return time.Time{}, false
	}
	return w.lastUse.Add(w.useTTL), true
}

// Impact estimates how many cached tokens the next request would have to
// write again if the host made change c to the last request: a change at
// some position of the prefix (tools, then system sections, then
// messages) loses what the cache holds from there on. Positions are
// estimated from the last request's content bytes scaled to its reported
// prompt tokens. Reasoning and tool-choice changes lose the messages, as
// on Anthropic; a model change loses everything. Before any cached
// response Impact is zero; after the cache is estimated to have expired it
// reports Expired with zero tokens.
func (w *Watcher) Impact(c Change) Impact {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.used || w.cached == 0 {
		return Impact{}
	}
	if !w.now().Before(w.lastUse.Add(w.useTTL)) {
		return Impact{Expired: true}
	}
	var pos int
	switch c.Dimension {
	case DimModel, DimTools:
		pos = 0
	case DimSystem:
		pos = w.toolBytes
		for i := range min(max(c.Index, 0), len(w.system)) {
			pos += len(w.system[i])
		}
	case DimToolChoice, DimReasoning:
		pos = w.toolBytes + w.sysBytes
	case DimMessagePrefix:
		pos = w.toolBytes + w.sysBytes
		for i := range min(max(c.Index, 0), len(w.msgs)) {
			pos += w.msgs[i].size
		}
	default:
		return Impact{Cached: w.cached}
	}
	total := w.toolBytes + w.sysBytes + w.msgBytes
	var before int64
	if total > 0 {
		before = int64(float64(pos) / float64(total) * float64(w.prompt))
	}
	return Impact{Tokens: max(w.cached-before, 0), Cached: w.cached}
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
