package cachewatch

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Dimension names one part of a request that feeds the provider's cache
// key.
type Dimension string

// The dimensions a Watcher compares, in the order a provider's cache key
// reads them.
const (
	// DimModel: the model id. Each model has its own cache.
	DimModel Dimension = "model"
	// DimTools: the tool definitions (names, descriptions, schemas, order).
	// They come first in the prefix, so a change loses everything.
	DimTools Dimension = "tools"
	// DimToolChoice: tool choice and parallel tool calls. Anthropic keeps
	// tools and system cached across a change but not the messages.
	DimToolChoice Dimension = "toolChoice"
	// DimSystem: the system prompt; Diff.Sections says which sections.
	DimSystem Dimension = "system"
	// DimReasoning: thinking settings (effort, budget, summary, on/off).
	// Anthropic keeps tools and system cached but not the messages.
	DimReasoning Dimension = "reasoning"
	// DimMessagePrefix: a message the previous request also sent was
	// rewritten or dropped; Diff.DivergedAt says where. Appending is not a
	// change.
	DimMessagePrefix Dimension = "messagePrefix"
)

// dimOrder is the canonical order of Diff.Changed.
var dimOrder = [...]Dimension{DimModel, DimTools, DimToolChoice, DimSystem, DimReasoning, DimMessagePrefix}

func dimRank(d Dimension) int { return slices.Index(dimOrder[:], d) }

// Section identifies one system prompt section by its index in
// Request.System and, when Options.SectionNames has one, its name.
type Section struct {
	Index int    `json:"index"`
	Name  string `json:"name,omitempty"`
}

// Diff says how a request differs from the one before it.
type Diff struct {
	// Changed lists the dimensions that differ, in DimModel … DimMessagePrefix
	// order. Empty on a Break means the request was unchanged.
	Changed []Dimension `json:"changed"`
	// Details says, for each changed dimension, what changed, for people.
	Details map[Dimension]string `json:"details,omitempty"`
	// Sections lists the system sections that changed, were added or were
	// removed, when Changed includes DimSystem.
	Sections []Section `json:"sections,omitempty"`
	// DivergedAt is the index of the first message that differs from the
	// previous request's message at the same index (or, when the history
	// got shorter and what is left is unchanged, the new length), when
	// Changed includes DimMessagePrefix; -1 otherwise.
	DivergedAt int `json:"diverged_at"`
}

// Has reports whether dimension d changed.
func (d *Diff) Has(dim Dimension) bool { return slices.Contains(d.Changed, dim) }

func (d *Diff) add(dim Dimension, detail string) {
	if d.Details == nil {
		d.Details = map[Dimension]string{}
	}
	if old, ok := d.Details[dim]; ok && old != detail {
		d.Details[dim] = old + "; " + detail
	} else {
		d.Details[dim] = detail
	}
	if !d.Has(dim) {
		d.Changed = append(d.Changed, dim)
		slices.SortFunc(d.Changed, func(a, b Dimension) int { return dimRank(a) - dimRank(b) })
	}
}

// merge folds a later diff into d, for a request sent again after one that
// got no response.
func (d *Diff) merge(o *Diff) {
	for _, dim := range o.Changed {
		d.add(dim, o.Details[dim])
	}
	for _, s := range o.Sections {
		if !slices.Contains(d.Sections, s) {
			d.Sections = append(d.Sections, s)
		}
	}
	if o.DivergedAt >= 0 && (d.DivergedAt < 0 || o.DivergedAt < d.DivergedAt) {
		d.DivergedAt = o.DivergedAt
	}
}

func (d *Diff) clone() *Diff {
	c := &Diff{DivergedAt: d.DivergedAt, Changed: slices.Clone(d.Changed), Sections: slices.Clone(d.Sections)}
	if d.Details != nil {
		c.Details = make(map[Dimension]string, len(d.Details))
		for k, v := range d.Details {
			c.Details[k] = v
		}
	}
	return c
}

func (d *Diff) describe(b *strings.Builder) {
	for i, dim := range d.Changed {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(string(dim))
		if s := d.Details[dim]; s != "" {
			b.WriteString(" (")
			b.WriteString(s)
			b.WriteString(")")
		}
	}
}

// Drift reports, before a request is sent, that it differs from the
// previous request in a way that can cost cache. It is a prediction: the
// response may still read the cache well, and the drift is then absorbed.
type Drift struct {
	// Step counts the requests the Watcher has seen, from 1.
	Step int `json:"step"`
	// Model is the outgoing request's model.
	Model string `json:"model"`
	Diff
	// Messages and PreviousMessages are the message counts of the outgoing
	// and the previous request.
	Messages         int `json:"messages"`
	PreviousMessages int `json:"previous_messages"`
}

// String describes the drift in one line.
func (d *Drift) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cache drift at step %d: ", d.Step)
	d.describe(&b)
	return b.String()
}

// Cause is the likely reason for a Break.
type Cause string

// Causes of a break.
const (
	// CauseChange: a dimension of the request changed (see Diff.Changed).
	CauseChange Cause = "change"
	// CauseTTL: the pause since the cache was last used was longer than
	// its time to live, so the entry had expired.
	CauseTTL Cause = "ttl"
	// CauseEviction: nothing changed and the entry should still have been
	// alive; the provider dropped it (or routed the request to a server
	// without it).
	CauseEviction Cause = "eviction"
)

// Break reports, after a response, that it read materially less from the
// prompt cache than the previous request had stored.
type Break struct {
	// Step counts the requests the Watcher has seen, from 1.
	Step int `json:"step"`
	// Model is the request's model.
	Model string `json:"model"`
	// Cause is the likely reason. A pause longer than the TTL wins over a
	// change, since the entry was gone either way.
	Cause Cause `json:"cause"`
	// Diff lists what changed since the previous response; empty when
	// nothing did.
	Diff
	// CacheRead and CacheWrite are the response's cache figures.
	CacheRead  int64 `json:"cache_read"`
	CacheWrite int64 `json:"cache_write"`
	// Expected is the floor the read fell below:
	// max(Options.Floor, Options.Ratio × (previous read + previous write)).
	Expected int64 `json:"expected"`
	// Rebilled is the tokens that had been cached (previous read + write)
	// and were not read this time: billed again, usually at the write rate.
	Rebilled int64 `json:"rebilled"`
	// Pause is the time from the previous use of the cache to this
	// request, and TTL the time to live that applied to it.
	Pause time.Duration `json:"pause"`
	TTL   time.Duration `json:"ttl"`
}

// String describes the break in one line.
func (b *Break) String() string {
	var s strings.Builder
	fmt.Fprintf(&s, "cache break at step %d: read %d tokens, expected at least %d; %d tokens billed again; cause %s",
		b.Step, b.CacheRead, b.Expected, b.Rebilled, b.Cause)
	switch b.Cause {
	case CauseTTL:
		fmt.Fprintf(&s, " (paused %s, TTL %s)", b.Pause.Round(time.Second), b.TTL)
	case CauseEviction:
		fmt.Fprintf(&s, " (paused %s, within TTL %s)", b.Pause.Round(time.Second), b.TTL)
	}
	if len(b.Changed) > 0 {
		s.WriteString(": ")
		b.describe(&s)
	}
	return s.String()
}

// Change is a change a host is considering, for Impact. Index is the
// system section (DimSystem) or the message (DimMessagePrefix) that would
// change; other dimensions ignore it.
type Change struct {
	Dimension Dimension `json:"dimension"`
	Index     int       `json:"index,omitempty"`
}

// Impact estimates what a Change would cost.
type Impact struct {
	// Tokens is the estimated cached tokens the next request would have to
	// write again instead of reading.
	Tokens int64 `json:"tokens"`
	// Cached is the estimated tokens in the cache now.
	Cached int64 `json:"cached"`
	// Expired reports that the cache is estimated to have expired already:
	// the next request pays for everything whatever changes.
	Expired bool `json:"expired,omitempty"`
}

// Stats are a Watcher's totals.
type Stats struct {
	Requests int `json:"requests"`
	Drifts   int `json:"drifts"`
	Breaks   int `json:"breaks"`
	// Absorbed counts drifts whose response still read the cache well.
	Absorbed int `json:"absorbed"`
	// Input, CacheRead and CacheWrite sum the responses' usage.
	Input      int64 `json:"input"`
	CacheRead  int64 `json:"cache_read"`
	CacheWrite int64 `json:"cache_write"`
	// Rebilled sums Break.Rebilled.
	Rebilled int64 `json:"rebilled"`
}

// ReadRatio is the share of all prompt tokens that were read from the
// cache, from 0 to 1.
func (s Stats) ReadRatio() float64 {
	total := s.Input + s.CacheRead + s.CacheWrite
	if total == 0 {
		return 0
	}
	return float64(s.CacheRead) / float64(total)
}
