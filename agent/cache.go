package agent

import (
	"encoding/json"
	"time"

	"github.com/reinhq/rein/agent/cachewatch"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// watchBefore tells the cache watcher about a request going out. What it
// predicts or sees is logged (cache.drift, cache.break), so hosts watch it
// on the event bus like any other event.
func (r *runState) watchBefore(req *llm.Request) {
	a := r.a
	d := a.watch.Before(req)
	if d == nil {
		return
	}
	a.log.Info("prompt cache drift", "session", r.sid, "turn", r.turn, "step", r.step, "drift", d.String())
	detail, _ := json.Marshal(d)
	r.emit(&session.CacheDrift{Changed: dims(d.Changed), DivergedAt: max(d.DivergedAt, 0), Detail: detail})
}

// watchAfter tells the cache watcher about a response's usage.
func (r *runState) watchAfter(u llm.Usage) {
	a := r.a
	b := a.watch.After(u)
	if b == nil {
		return
	}
	a.log.Warn("prompt cache break", "session", r.sid, "turn", r.turn, "step", r.step, "break", b.String())
	detail, _ := json.Marshal(b)
	r.emit(&session.CacheBreak{Cause: string(b.Cause), Changed: dims(b.Changed), Read: b.CacheRead, Expected: b.Expected, Rebilled: b.Rebilled, Detail: detail})
}

func dims(ds []cachewatch.Dimension) []string {
	if len(ds) == 0 {
		return nil
	}
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = string(d)
	}
	return out
}

// CacheExpiresAt estimates when the prompt cache entry of this
// conversation runs out; ok is false before any request was cached.
func (a *Agent) CacheExpiresAt() (t time.Time, ok bool) { return a.watch.ExpiresAt() }

// CacheImpact estimates how many cached tokens a change the host is
// considering (a system section edit, a tool change, a history rewrite)
// would make the next request write again.
func (a *Agent) CacheImpact(c cachewatch.Change) cachewatch.Impact { return a.watch.Impact(c) }

// CacheStats returns the cache watcher's running figures.
func (a *Agent) CacheStats() cachewatch.Stats { return a.watch.Stats() }
