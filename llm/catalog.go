package llm

import (
	"cmp"
	"regexp"
	"slices"
	"sync"
)

// Prices are a model's list prices in US dollars per million tokens.
type Prices struct {
	Input        float64 `json:"input"`
	Output       float64 `json:"output"` // reasoning tokens are billed as output
	CacheRead    float64 `json:"cache_read,omitempty"`
	CacheWrite5m float64 `json:"cache_write_5m,omitempty"` // also the price of a write with no TTL split
	CacheWrite1h float64 `json:"cache_write_1h,omitempty"`
}

// ModelInfo describes one model: where it runs, how much it holds and what
// it costs.
type ModelInfo struct {
	// ID is the model id sent to the provider, e.g. "claude-sonnet-4-5".
	ID string `json:"id"`
	// Provider names the provider, e.g. "anthropic" or "openai".
	Provider string `json:"provider"`
	// Aliases are other ids that name the same model.
	Aliases []string `json:"aliases,omitempty"`
	// ContextWindow is the most tokens of input plus output per request.
	ContextWindow int `json:"context_window"`
	// MaxOutput is the most output tokens per response.
	MaxOutput int `json:"max_output"`
	// Prices are the list prices.
	Prices Prices `json:"prices"`
}

// Catalog is a set of ModelInfo looked up by id. It is safe for concurrent
// use. The zero value is an empty catalog ready to use.
type Catalog struct {
	mu    sync.RWMutex
	byID  map[string]ModelInfo
	alias map[string]string // alias → id
}

// NewCatalog returns a catalog holding infos; later entries replace
// earlier ones with the same id.
func NewCatalog(infos ...ModelInfo) *Catalog {
	c := &Catalog{}
	for _, info := range infos {
		c.Register(info)
	}
	return c
}

var (
	defaultOnce    sync.Once
	defaultCatalog *Catalog
)

// DefaultCatalog returns the process-wide catalog of current Anthropic
// and OpenAI models with their published context windows and list prices
// (checked late 2025). Register on it to add a model or correct a price
// for everyone in the process; use Clone for a private copy.
func DefaultCatalog() *Catalog {
	defaultOnce.Do(func() { defaultCatalog = NewCatalog(defaultModels()...) })
	return defaultCatalog
}

// Register adds info, replacing any model with the same id. Its aliases
// then resolve to it.
func (c *Catalog) Register(info ModelInfo) {
	info.Aliases = slices.Clone(info.Aliases)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil {
		c.byID = make(map[string]ModelInfo)
		c.alias = make(map[string]string)
	}
	if old, ok := c.byID[info.ID]; ok {
		for _, a := range old.Aliases {
			if c.alias[a] == info.ID {
				delete(c.alias, a)
			}
		}
	}
	c.byID[info.ID] = info
	delete(c.alias, info.ID)
	for _, a := range info.Aliases {
		if _, isID := c.byID[a]; !isID {
			c.alias[a] = info.ID
		}
	}
}

// dated matches the date suffix of a pinned model version:
// "-20250929" (Anthropic) or "-2024-08-06" (OpenAI).
var dated = regexp.MustCompile(`-(\d{8}|\d{4}-\d{2}-\d{2})$`)

// Lookup returns the model with the given id or alias. A pinned version
// ("claude-sonnet-4-5-20250929", "gpt-4o-2024-08-06") falls back to its
// undated id, so dated snapshots get their family's entry.
func (c *Catalog) Lookup(id string) (ModelInfo, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if info, ok := c.lookup(id); ok {
		return info, true
	}
	if loc := dated.FindStringIndex(id); loc != nil {
		return c.lookup(id[:loc[0]])
	}
	return ModelInfo{}, false
}

func (c *Catalog) lookup(id string) (ModelInfo, bool) {
	if info, ok := c.byID[id]; ok {
		return cloneInfo(info), true
	}
	if target, ok := c.alias[id]; ok {
		return cloneInfo(c.byID[target]), true
	}
	return ModelInfo{}, false
}

func cloneInfo(info ModelInfo) ModelInfo {
	info.Aliases = slices.Clone(info.Aliases)
	return info
}

// All returns every model, sorted by provider then id.
func (c *Catalog) All() []ModelInfo {
	c.mu.RLock()
	out := make([]ModelInfo, 0, len(c.byID))
	for _, info := range c.byID {
		out = append(out, cloneInfo(info))
	}
	c.mu.RUnlock()
	slices.SortFunc(out, func(a, b ModelInfo) int {
		return cmp.Or(cmp.Compare(a.Provider, b.Provider), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// Clone returns an independent copy of c.
func (c *Catalog) Clone() *Catalog {
	return NewCatalog(c.All()...)
}

// Cost returns the list price in US dollars of usage u on model, and
// false when the catalog does not know the model. Cache writes without a
// TTL split are priced as five-minute writes.
func (c *Catalog) Cost(model string, u Usage) (float64, bool) {
	info, ok := c.Lookup(model)
	if !ok {
		return 0, false
	}
	return info.Prices.Cost(u), true
}

// Cost returns the price in US dollars of usage u.
func (p Prices) Cost(u Usage) float64 {
	unsplit := max(u.CacheWrite-u.CacheWrite5m-u.CacheWrite1h, 0)
	micro := float64(u.Input)*p.Input +
		float64(u.Output)*p.Output +
		float64(u.CacheRead)*p.CacheRead +
		float64(u.CacheWrite5m+unsplit)*p.CacheWrite5m +
		float64(u.CacheWrite1h)*p.CacheWrite1h
	return micro / 1e6
}

// anthropicPrices derives the cache prices from the input price, as
// Anthropic publishes them: 5-minute writes 1.25×, 1-hour writes 2×,
// reads 0.1×.
func anthropicPrices(in, out float64) Prices {
	return Prices{Input: in, Output: out, CacheRead: in / 10, CacheWrite5m: in * 1.25, CacheWrite1h: in * 2}
}

// openaiPrices: cached input is read at the given price; OpenAI charges
// nothing extra to write its automatic cache.
func openaiPrices(in, out, cached float64) Prices {
	return Prices{Input: in, Output: out, CacheRead: cached, CacheWrite5m: in, CacheWrite1h: in}
}

func defaultModels() []ModelInfo {
	const (
		a = "anthropic"
		o = "openai"
	)
	return []ModelInfo{
		{ID: "claude-opus-4-5", Provider: a, Aliases: []string{"claude-opus-4-5-20251101"}, ContextWindow: 200_000, MaxOutput: 64_000, Prices: anthropicPrices(5, 25)},
		{ID: "claude-opus-4-1", Provider: a, Aliases: []string{"claude-opus-4-1-20250805"}, ContextWindow: 200_000, MaxOutput: 32_000, Prices: anthropicPrices(15, 75)},
		{ID: "claude-opus-4-0", Provider: a, Aliases: []string{"claude-opus-4", "claude-opus-4-20250514"}, ContextWindow: 200_000, MaxOutput: 32_000, Prices: anthropicPrices(15, 75)},
		{ID: "claude-sonnet-4-5", Provider: a, Aliases: []string{"claude-sonnet-4-5-20250929"}, ContextWindow: 200_000, MaxOutput: 64_000, Prices: anthropicPrices(3, 15)},
		{ID: "claude-sonnet-4-0", Provider: a, Aliases: []string{"claude-sonnet-4", "claude-sonnet-4-20250514"}, ContextWindow: 200_000, MaxOutput: 64_000, Prices: anthropicPrices(3, 15)},
		{ID: "claude-haiku-4-5", Provider: a, Aliases: []string{"claude-haiku-4-5-20251001"}, ContextWindow: 200_000, MaxOutput: 64_000, Prices: anthropicPrices(1, 5)},
		{ID: "claude-3-5-haiku-latest", Provider: a, Aliases: []string{"claude-3-5-haiku", "claude-3-5-haiku-20241022"}, ContextWindow: 200_000, MaxOutput: 8_192, Prices: anthropicPrices(0.8, 4)},

		{ID: "gpt-5", Provider: o, ContextWindow: 400_000, MaxOutput: 128_000, Prices: openaiPrices(1.25, 10, 0.125)},
		{ID: "gpt-5-mini", Provider: o, ContextWindow: 400_000, MaxOutput: 128_000, Prices: openaiPrices(0.25, 2, 0.025)},
		{ID: "gpt-5-nano", Provider: o, ContextWindow: 400_000, MaxOutput: 128_000, Prices: openaiPrices(0.05, 0.4, 0.005)},
		{ID: "gpt-4.1", Provider: o, ContextWindow: 1_047_576, MaxOutput: 32_768, Prices: openaiPrices(2, 8, 0.5)},
		{ID: "gpt-4.1-mini", Provider: o, ContextWindow: 1_047_576, MaxOutput: 32_768, Prices: openaiPrices(0.4, 1.6, 0.1)},
		{ID: "gpt-4.1-nano", Provider: o, ContextWindow: 1_047_576, MaxOutput: 32_768, Prices: openaiPrices(0.1, 0.4, 0.025)},
		{ID: "gpt-4o", Provider: o, ContextWindow: 128_000, MaxOutput: 16_384, Prices: openaiPrices(2.5, 10, 1.25)},
		{ID: "gpt-4o-mini", Provider: o, ContextWindow: 128_000, MaxOutput: 16_384, Prices: openaiPrices(0.15, 0.6, 0.075)},
		{ID: "o3", Provider: o, ContextWindow: 200_000, MaxOutput: 100_000, Prices: openaiPrices(2, 8, 0.5)},
		{ID: "o4-mini", Provider: o, ContextWindow: 200_000, MaxOutput: 100_000, Prices: openaiPrices(1.1, 4.4, 0.275)},
	}
}
