package cachewatch

import (
	"time"
)

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
