package agent

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/reinhq/rein/agent/cachewatch"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// watchBefore tells the cache watcher about a request going out. What it
// predicts or sees is logged (cache.drift, cache.break), so hosts watch it
// on the event bus like any other event.
func (r *runState) watchBefore(req *llm.Request) {
	if d := r.a.watch.Before(req); d != nil {
		r.cacheEvent(slog.LevelInfo, "prompt cache drift", d, &session.CacheDrift{Changed: dims(d.Changed), DivergedAt: max(d.DivergedAt, 0)})
	}
}

// watchAfter tells the cache watcher about a response's usage.
func (r *runState) watchAfter(u llm.Usage) {
	if b := r.a.watch.After(u); b != nil {
		r.cacheEvent(slog.LevelWarn, "prompt cache break", b, &session.CacheBreak{Cause: string(b.Cause), Changed: dims(b.Changed), Read: b.CacheRead, Expected: b.Expected, Rebilled: b.Rebilled})
	}
}

// cacheEvent logs what the watcher found and records it, with its whole
// report as the event's detail.
func (r *runState) cacheEvent(level slog.Level, msg string, what fmt.Stringer, p session.Payload) {
	r.a.log.Log(r.ctx, level, msg, "session", r.sid, "turn", r.turn, "step", r.step, "report", what.String())
	detail, _ := json.Marshal(what)
	switch p := p.(type) {
	case *session.CacheDrift:
		p.Detail = detail
	case *session.CacheBreak:
		p.Detail = detail
	}
	r.emit(p)
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
