package openai

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResolve(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		opts     *Options
		wantErr  error
		errHas   string
		wantBase string
		wantMax  string
	}{
		{name: "openai without key", opts: nil, wantErr: ErrNoAPIKey, errHas: "OPENAI_API_KEY"},
		{name: "openai key and base from env", env: map[string]string{"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": "https://proxy.example/v1"}, wantBase: "https://proxy.example/v1", wantMax: "max_completion_tokens"},
		{name: "openai default base", env: map[string]string{"OPENAI_API_KEY": "k"}, wantBase: "https://api.openai.com/v1", wantMax: "max_completion_tokens"},
		{name: "deepseek without key", opts: &Options{Provider: ProviderDeepSeek}, env: map[string]string{"OPENAI_API_KEY": "k"}, wantErr: ErrNoAPIKey, errHas: "DEEPSEEK_API_KEY"},
		{name: "deepseek with key", opts: &Options{Provider: ProviderDeepSeek}, env: map[string]string{"DEEPSEEK_API_KEY": "d"}, wantBase: "https://api.deepseek.com", wantMax: "max_tokens"},
		{name: "openrouter without key", opts: &Options{Provider: ProviderOpenRouter}, wantErr: ErrNoAPIKey, errHas: "OPENROUTER_API_KEY"},
		{name: "ollama needs no key", opts: &Options{Provider: ProviderOllama}, wantBase: "http://localhost:11434/v1", wantMax: "max_tokens"},
		{name: "compatible needs a base URL", opts: &Options{Provider: ProviderCompatible}, wantErr: ErrNoBaseURL},
		{name: "unknown label with base URL", opts: &Options{Provider: "my-gateway", BaseURL: "http://gw/v1"}, wantBase: "http://gw/v1", wantMax: "max_tokens"},
		{name: "compat override", opts: &Options{Provider: ProviderOllama, Compat: &Compat{}}, wantBase: "http://localhost:11434/v1", wantMax: "max_completion_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, k := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "DEEPSEEK_API_KEY", "OPENROUTER_API_KEY", "VLLM_API_KEY", "LLAMA_API_KEY"} {
				t.Setenv(k, tt.env[k])
			}
			cfg, err := resolve(tt.opts)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.errHas) {
					t.Fatalf("err = %v, want %v mentioning %q", err, tt.wantErr, tt.errHas)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{tt.wantBase, tt.wantMax}, []string{cfg.baseURL, cfg.compat.MaxTokensField}); diff != "" {
				t.Errorf("base, max field (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPresets(t *testing.T) {
	for _, name := range Presets() {
		o, err := Preset(name)
		if err != nil {
			t.Fatal(err)
		}
		if o.Provider != name || o.Compat == nil {
			t.Errorf("%s: %+v", name, o)
		}
		if name != ProviderCompatible && o.BaseURL == "" {
			t.Errorf("%s: no base URL", name)
		}
	}
	if _, err := Preset("gpt"); !errors.Is(err, ErrUnknownProvider) {
		t.Errorf("unknown preset: %v", err)
	}
}

func TestReasoningModel(t *testing.T) {
	for model, want := range map[string]bool{
		"gpt-5": true, "gpt-5-mini": true, "o3": true, "o4-mini": true, "openai/gpt-oss-20b": true,
		"gpt-4o": false, "gpt-4.1": false, "omni-moderation": false, "": false,
	} {
		if got := reasoningModel(model); got != want {
			t.Errorf("reasoningModel(%q) = %v, want %v", model, got, want)
		}
	}
}

func TestSSEReader(t *testing.T) {
	in := ": comment\n\nevent: a\ndata: one\ndata:two\n\nid: 7\nretry: 10\n\ndata: {\"x\":1}\r\n\r\ndata: tail"
	r := newSSEReader(strings.NewReader(in))
	type ev struct{ Event, Data string }
	var got []ev
	for {
		e, d, err := r.next()
		if err != nil {
			break
		}
		got = append(got, ev{string(e), string(d)})
	}
	want := []ev{{"a", "one\ntwo"}, {"", `{"x":1}`}, {"", "tail"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	long := "data: " + strings.Repeat("x", 100<<10) + "\n\n"
	r = newSSEReader(strings.NewReader(long))
	_, d, err := r.next()
	if err != nil || len(d) != 100<<10 {
		t.Errorf("long line: %d bytes, %v", len(d), err)
	}
}

func TestPresetOpenAIBaseURLFromEnv(t *testing.T) {
	t.Setenv("OPENAI_BASE_URL", "https://proxy.example/v1")
	o, err := Preset(ProviderOpenAI)
	if err != nil || o.BaseURL != "https://proxy.example/v1" {
		t.Errorf("Preset(openai) = %q, %v; want the base URL from $OPENAI_BASE_URL", o.BaseURL, err)
	}
	t.Setenv("OPENAI_BASE_URL", "")
	if o, _ := Preset(ProviderOpenAI); o.BaseURL != "https://api.openai.com/v1" {
		t.Errorf("Preset(openai) without env = %q", o.BaseURL)
	}
}
