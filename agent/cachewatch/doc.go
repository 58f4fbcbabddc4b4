// Package cachewatch watches a conversation's prompt cache from the
// requests a loop sends and the usage the provider reports, and says when
// the cache was lost and why.
//
// A provider's prompt cache is keyed by the exact prefix of a request:
// tools, then the system prompt, then the messages, plus settings such as
// the model and thinking. A healthy agent loop only appends to that
// prefix, so every step reads back what the step before it wrote. When
// something earlier in the prefix changes — a tool list reloaded, a system
// section re-rendered with a timestamp, history compacted or rewritten —
// the provider bills the whole rest of the prompt again at the cache-write
// rate, and nothing in the response says why.
//
// A Watcher keeps a fingerprint of the previous request and reports two
// events:
//
//   - a *Drift from Before, when the outgoing request differs from the
//     previous one in a way that can cost cache: which dimensions changed
//     (model, tools, tool choice, system and which of its sections,
//     reasoning settings, the message prefix and the index where it
//     diverged). A drift is a prediction; it may cost nothing (a change
//     at the very end of the prefix) and is then absorbed.
//   - a *Break from After, when the response read materially less from the
//     cache than the previous request had stored: less than
//     max(Floor, Ratio × (previous read + previous write)). A break names
//     the dimensions that changed since the previous response, the tokens
//     that were cached before and had to be billed again, and — when
//     nothing changed — the likely cause: the cache's time to live ran out
//     during a pause, or the provider evicted the entry.
//
// ExpiresAt estimates when the cache entry runs out, and Impact estimates
// how many cached tokens a change the host is considering would throw away.
//
// Quick start — one Watcher per conversation, called around each model
// request:
//
//	w := cachewatch.New(nil) // 5-minute TTL, 0.8 read ratio
//	for {
//		req := buildRequest()
//		if d := w.Before(req); d != nil {
//			logger.Info("cache drift", "drift", d.String())
//		}
//		res, err := llm.Collect(model.Stream(ctx, req))
//		// A response that failed before reporting usage has a zero Usage,
//		// which After ignores; a partial usage is judged like any other.
//		if b := w.After(res.Usage); b != nil {
//			logger.Warn("cache break", "break", b.String())
//		}
//		if err != nil {
//			return err
//		}
//		// … run tools, append to the history …
//	}
//
// Drift and Break carry JSON tags, so a loop may also record them as
// events.
//
// # Cost per request
//
// Work per request is proportional to what is new, not to the history.
// Each message is hashed once, when first seen, and compared with the
// previous request's message at the same position (positional comparison
// tells an append, which is healthy, from a rewrite, which is not). A
// message of a later request is taken as unchanged without hashing when
// it is the same Go value: same role, same Parts backing array and length,
// same Provenance pointer (and, for the previous request's newest few
// messages, the same last part). When req.Messages shares its backing
// array with the previous request's (a loop that appends to one history
// slice), even that identity check is skipped for all but the last few
// messages of the previous request, so an append-only step costs the new
// messages only. The consequence, and the contract: parts are values —
// a Part sent once must not be changed in place (send a new Part), and a
// message of the shared history slice other than the newest few must not
// be overwritten in place (build a new slice, as history rewrites
// naturally do). Options.CheckAll turns the backing-array shortcut off.
// Tools and system sections are compared each request (a string compares at
// once with itself); their size does not grow with the conversation.
//
// Hashes use hash/maphash with a seed chosen per process: they identify
// content within one process and are never persisted.
package cachewatch
