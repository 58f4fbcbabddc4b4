package llm

// Usage counts the tokens of one response. Input counts only the input
// tokens that were neither read from nor written to the prompt cache, so
// the whole prompt is Input + CacheRead + CacheWrite whatever the provider;
// adapters normalise to this.
type Usage struct {
	Input      int64 `json:"input,omitempty"`
	Output     int64 `json:"output,omitempty"`
	Reasoning  int64 `json:"reasoning,omitempty"` // part of Output
	CacheRead  int64 `json:"cache_read,omitempty"`
	CacheWrite int64 `json:"cache_write,omitempty"`
	// CacheWrite5m and CacheWrite1h split CacheWrite by TTL where the
	// provider reports it; otherwise both are zero.
	CacheWrite5m int64 `json:"cache_write_5m,omitempty"`
	CacheWrite1h int64 `json:"cache_write_1h,omitempty"`
}

// PromptTokens is the whole prompt: Input + CacheRead + CacheWrite.
func (u Usage) PromptTokens() int64 { return u.Input + u.CacheRead + u.CacheWrite }

// Total is PromptTokens + Output.
func (u Usage) Total() int64 { return u.PromptTokens() + u.Output }

// Merge folds a later report of the same response into u: each non-zero
// counter of v replaces u's. Providers report cumulative counts, some in
// several chunks (input first, output at the end).
func (u *Usage) Merge(v Usage) {
	set := func(dst *int64, src int64) {
		if src != 0 {
			*dst = src
		}
	}
	set(&u.Input, v.Input)
	set(&u.Output, v.Output)
	set(&u.Reasoning, v.Reasoning)
	set(&u.CacheRead, v.CacheRead)
	set(&u.CacheWrite, v.CacheWrite)
	set(&u.CacheWrite5m, v.CacheWrite5m)
	set(&u.CacheWrite1h, v.CacheWrite1h)
}

// Add sums v into u, for totals across responses.
func (u *Usage) Add(v Usage) {
	u.Input += v.Input
	u.Output += v.Output
	u.Reasoning += v.Reasoning
	u.CacheRead += v.CacheRead
	u.CacheWrite += v.CacheWrite
	u.CacheWrite5m += v.CacheWrite5m
	u.CacheWrite1h += v.CacheWrite1h
}
