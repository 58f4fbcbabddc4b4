package llmtest

import (
	"encoding/json"
	"sync"
	"time"

	"github.com/reinhq/rein/llm"
)

const (
	defaultMinCacheTokens = 1024
	defaultCacheTTL       = 5 * time.Minute
)

// segment is one cacheable piece of a prompt: a tool, a system section or
// a message part, in canonical bytes without cache hints, so moving a
// breakpoint does not change the prefix.
type segment struct {
	data       []byte
	breakpoint bool
	ttl        time.Duration
}

// segments lays a request out in cache order: tools, system, messages.
func segments(req *llm.Request) []segment {
	var out []segment
	hint := func(h *llm.CacheHint) (bool, time.Duration) {
		if h == nil {
			return false, 0
		}
		if h.TTL <= 0 {
			return true, defaultCacheTTL
		}
		return true, h.TTL
	}
	for _, t := range req.Tools {
		bp, ttl := hint(t.Cache)
		t.Cache = nil
		b, _ := json.Marshal(t)
		out = append(out, segment{data: append([]byte("tool:"), b...), breakpoint: bp, ttl: ttl})
	}
	for _, s := range req.System {
		bp, ttl := hint(s.Cache)
		out = append(out, segment{data: append([]byte("system:"), s.Text...), breakpoint: bp, ttl: ttl})
	}
	for _, m := range req.Messages {
		out = append(out, segment{data: []byte("\x00" + string(m.Role) + ":")})
		for _, p := range m.Parts {
			bp, ttl := hint(partHint(p))
			b, _ := llm.MarshalPart(stripHints(p))
			out = append(out, segment{data: b, breakpoint: bp, ttl: ttl})
		}
	}
	return out
}

func partHint(p llm.Part) *llm.CacheHint {
	switch p := p.(type) {
	case *llm.Text:
		return p.Cache
	case *llm.Reasoning:
		return p.Cache
	case *llm.ToolCall:
		return p.Cache
	case *llm.ToolResult:
		return p.Cache
	case *llm.Image:
		return p.Cache
	case *llm.Document:
		return p.Cache
	}
	return nil
}

// stripHints returns a copy of p without cache hints, nested ones included.
func stripHints(p llm.Part) llm.Part {
	p = llm.ClonePart(p)
	switch p := p.(type) {
	case *llm.Text:
		p.Cache = nil
	case *llm.Reasoning:
		p.Cache = nil
	case *llm.ToolCall:
		p.Cache = nil
	case *llm.ToolResult:
		p.Cache = nil
		for i, q := range p.Parts {
			p.Parts[i] = stripHints(q)
		}
	case *llm.Image:
		p.Cache = nil
	case *llm.Document:
		p.Cache = nil
	}
	return p
}

func estimateTokens(bytes int) int64 { return int64(bytes / 4) }

// cacheKey names a prefix: the model plus a hash of the prefix's bytes.
type cacheKey struct {
	hash uint64
	n    int
}

type cacheEntry struct {
	expires time.Time
	ttl     time.Duration
}

// promptCache simulates a provider's prompt cache.
type promptCache struct {
	min int64
	now func() time.Time

	mu      sync.Mutex
	entries map[cacheKey]cacheEntry
}

func newPromptCache(min int, now func() time.Time) *promptCache {
	if min <= 0 {
		min = defaultMinCacheTokens
	}
	if now == nil {
		now = time.Now
	}
	return &promptCache{min: int64(min), now: now, entries: map[cacheKey]cacheEntry{}}
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

func fnvAdd(h uint64, b []byte) uint64 {
	for _, c := range b {
		h ^= uint64(c)
		h *= fnvPrime
	}
	return h
}

// apply looks the request up in the cache and stores its prefixes. It
// reports the usage split (Input, CacheRead, CacheWrite with its TTL
// split) and whether the request read or wrote anything.
func (c *promptCache) apply(d *decoded) (llm.Usage, bool) {
	segs := segments(d.req)
	if d.autoCache && len(segs) > 0 {
		// Automatic caching: the whole prompt is one breakpoint.
		for i := range segs {
			segs[i].breakpoint = false
		}
		segs[len(segs)-1].breakpoint = true
		segs[len(segs)-1].ttl = defaultCacheTTL
	}
	// Boundaries after each segment: cumulative bytes and prefix hash.
	keys := make([]cacheKey, len(segs))
	h := fnvAdd(fnvOffset, []byte(d.req.Model+"\x00"))
	n := 0
	for i, s := range segs {
		h = fnvAdd(h, s.data)
		h = fnvAdd(h, []byte{0xff}) // separate segments
		n += len(s.data)
		keys[i] = cacheKey{hash: h, n: n}
	}
	total := estimateTokens(n)
	last := -1
	for i, s := range segs {
		if s.breakpoint {
			last = i
		}
	}
	if last < 0 {
		return llm.Usage{}, false
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	// Read: the longest prefix up to the last breakpoint already cached.
	read := -1
	for i := last; i >= 0; i-- {
		if e, ok := c.entries[keys[i]]; ok {
			if now.Before(e.expires) {
				read = i
				e.expires = now.Add(e.ttl) // a hit refreshes the entry
				c.entries[keys[i]] = e
				break
			}
			delete(c.entries, keys[i])
		}
	}
	var u llm.Usage
	readTokens := int64(0)
	if read >= 0 {
		readTokens = estimateTokens(keys[read].n)
	}
	// Write: each span from the read point to a breakpoint is stored with
	// that breakpoint's TTL, when the prefix is long enough to cache.
	from := readTokens
	for i := read + 1; i <= last; i++ {
		s := segs[i]
		if !s.breakpoint {
			continue
		}
		tokens := estimateTokens(keys[i].n)
		if tokens < c.min {
			continue
		}
		c.entries[keys[i]] = cacheEntry{expires: now.Add(s.ttl), ttl: s.ttl}
		span := tokens - from
		from = tokens
		if d.autoCache {
			continue // automatic caches report reads only
		}
		u.CacheWrite += span
		if s.ttl >= time.Hour {
			u.CacheWrite1h += span
		} else {
			u.CacheWrite5m += span
		}
	}
	if readTokens == 0 && u.CacheWrite == 0 {
		return llm.Usage{}, false
	}
	u.CacheRead = readTokens
	u.Input = max(total-u.CacheRead-u.CacheWrite, 0)
	return u, true
}
