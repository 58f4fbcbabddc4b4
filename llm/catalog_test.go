package llm_test

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/llm"
)

func TestDefaultCatalogCoversCurrentModels(t *testing.T) {
	c := llm.DefaultCatalog()
	for _, id := range []string{
		"claude-opus-4-5", "claude-opus-4-1", "claude-opus-4", "claude-sonnet-4-5", "claude-sonnet-4",
		"claude-haiku-4-5", "claude-3-5-haiku", "claude-3-5-haiku-latest",
		"gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-4o", "gpt-4o-mini", "o3", "o4-mini",
	} {
		info, ok := c.Lookup(id)
		if !ok {
			t.Errorf("Lookup(%q) found nothing", id)
			continue
		}
		if info.ContextWindow <= 0 || info.MaxOutput <= 0 || info.Prices.Input <= 0 || info.Prices.Output <= info.Prices.Input || info.Prices.CacheRead >= info.Prices.Input {
			t.Errorf("%s has implausible figures: %+v", id, info)
		}
		if info.Provider != "anthropic" && info.Provider != "openai" {
			t.Errorf("%s provider = %q", id, info.Provider)
		}
	}
}

func TestCatalogLookup(t *testing.T) {
	c := llm.DefaultCatalog()
	tests := []struct{ in, want string }{
		{"claude-sonnet-4-5", "claude-sonnet-4-5"},
		{"claude-sonnet-4-5-20250929", "claude-sonnet-4-5"},
		{"claude-opus-4-20250514", "claude-opus-4-0"},
		{"claude-sonnet-4", "claude-sonnet-4-0"},
		{"gpt-4o-2024-08-06", "gpt-4o"},
		{"gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"},
	}
	for _, tt := range tests {
		info, ok := c.Lookup(tt.in)
		if !ok || info.ID != tt.want {
			t.Errorf("Lookup(%q) = %q, %v; want %q", tt.in, info.ID, ok, tt.want)
		}
	}
	for _, id := range []string{"", "gpt-6", "claude-sonnet-4-5-2025"} {
		if info, ok := c.Lookup(id); ok {
			t.Errorf("Lookup(%q) = %+v, want nothing", id, info)
		}
	}
}

func TestCatalogRegisterOverridesAndAll(t *testing.T) {
	c := llm.DefaultCatalog().Clone()
	c.Register(llm.ModelInfo{ID: "gpt-4o", Provider: "openai", ContextWindow: 1, MaxOutput: 1, Prices: llm.Prices{Input: 1, Output: 2}})
	c.Register(llm.ModelInfo{ID: "local-llama", Provider: "ollama", Aliases: []string{"llama"}, ContextWindow: 8192, MaxOutput: 2048})
	if info, _ := c.Lookup("gpt-4o"); info.Prices.Input != 1 {
		t.Errorf("Register did not replace gpt-4o: %+v", info)
	}
	if info, ok := c.Lookup("llama"); !ok || info.ID != "local-llama" {
		t.Errorf("alias lookup = %+v, %v", info, ok)
	}
	if info, _ := llm.DefaultCatalog().Lookup("gpt-4o"); info.Prices.Input != 2.5 {
		t.Errorf("registering on a clone changed the default catalog: %+v", info)
	}
	// Replacing a model drops its old aliases.
	c.Register(llm.ModelInfo{ID: "local-llama", Provider: "ollama"})
	if _, ok := c.Lookup("llama"); ok {
		t.Error("an alias survived the re-registration of its model")
	}
	all := c.All()
	if len(all) != len(llm.DefaultCatalog().All())+1 {
		t.Errorf("All() has %d models", len(all))
	}
	for i := 1; i < len(all); i++ {
		a, b := all[i-1], all[i]
		if a.Provider > b.Provider || a.Provider == b.Provider && a.ID >= b.ID {
			t.Errorf("All() not sorted at %d: %s/%s then %s/%s", i, a.Provider, a.ID, b.Provider, b.ID)
		}
	}
	var empty llm.Catalog
	empty.Register(llm.ModelInfo{ID: "x"})
	if diff := cmp.Diff([]llm.ModelInfo{{ID: "x"}}, empty.All()); diff != "" {
		t.Errorf("zero Catalog (-want +got):\n%s", diff)
	}
}

func TestCatalogCost(t *testing.T) {
	c := llm.DefaultCatalog()
	tests := []struct {
		name  string
		model string
		u     llm.Usage
		want  float64
	}{
		// Sonnet 4.5: $3 in, $15 out, $0.30 read, $3.75 5m write, $6 1h write.
		{"plain", "claude-sonnet-4-5", llm.Usage{Input: 1_000_000, Output: 1_000_000}, 18},
		{"cache split", "claude-sonnet-4-5", llm.Usage{Input: 1000, CacheRead: 10_000, CacheWrite: 3000, CacheWrite5m: 1000, CacheWrite1h: 2000, Output: 500},
			(1000*3 + 10_000*0.3 + 1000*3.75 + 2000*6 + 500*15) / 1e6},
		{"unsplit write priced as 5m", "claude-haiku-4-5", llm.Usage{CacheWrite: 1_000_000}, 1.25},
		{"openai cached", "gpt-5-mini", llm.Usage{Input: 1_000_000, CacheRead: 1_000_000, Output: 1_000_000}, 0.25 + 0.025 + 2},
		{"dated id", "gpt-4o-2024-11-20", llm.Usage{Output: 1_000_000}, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := c.Cost(tt.model, tt.u)
			if !ok {
				t.Fatalf("Cost(%q) unknown", tt.model)
			}
			if math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("Cost = %v, want %v", got, tt.want)
			}
		})
	}
	if _, ok := c.Cost("no-such-model", llm.Usage{Input: 1}); ok {
		t.Error("Cost of an unknown model reported ok")
	}
}
