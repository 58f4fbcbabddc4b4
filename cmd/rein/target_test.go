package main

import (
	"errors"
	"strings"
	"testing"
)

func TestResolveTarget(t *testing.T) {
	env := func(kv ...string) func(string) string {
		m := map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	tests := []struct {
		name    string
		spec    string
		baseURL string
		cfg     *config
		env     func(string) string
		want    string // provider/model
		wantURL string
		wantErr []string // substrings of the error
	}{
		{name: "anthropic key picks anthropic", env: env("ANTHROPIC_API_KEY", "sk-test-secret"), want: "anthropic/claude-sonnet-4-5"},
		{name: "openai key picks openai", env: env("OPENAI_API_KEY", "sk-test-secret"), want: "openai/gpt-5"},
		{name: "explicit model", spec: "openai/gpt-4o", env: env("OPENAI_API_KEY", "sk-test-secret"), want: "openai/gpt-4o"},
		{name: "config model", cfg: &config{Model: "deepseek/deepseek-chat"}, env: env("DEEPSEEK_API_KEY", "sk-test-secret"), want: "deepseek/deepseek-chat", wantURL: "https://api.deepseek.com"},
		{name: "ollama needs no key", spec: "ollama/llama3.2", env: env(), want: "ollama/llama3.2", wantURL: "http://localhost:11434/v1"},
		{name: "base url flag wins", spec: "anthropic/claude-haiku-4-5", baseURL: "http://127.0.0.1:9/", env: env("ANTHROPIC_API_KEY", "sk-test-secret", "ANTHROPIC_BASE_URL", "http://env"), want: "anthropic/claude-haiku-4-5", wantURL: "http://127.0.0.1:9/"},
		{name: "base url from env", spec: "anthropic", env: env("ANTHROPIC_API_KEY", "sk-test-secret", "ANTHROPIC_BASE_URL", "http://env"), want: "anthropic/claude-sonnet-4-5", wantURL: "http://env"},
		{name: "nothing configured", env: env(), wantErr: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "--model ollama/<name>", "rein replay"}},
		{name: "missing key names the variable", spec: "openai/gpt-5", env: env(), wantErr: []string{"export OPENAI_API_KEY=", "ollama", "rein replay"}},
		{name: "unknown provider", spec: "acme/x", env: env(), wantErr: []string{`unknown provider "acme"`, "anthropic"}},
		{name: "compatible needs a url", spec: "openai-compatible/qwen", env: env(), wantErr: []string{"--base-url"}},
		{name: "ollama needs a name", spec: "ollama", env: env(), wantErr: []string{"name the model"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolveTarget(tt.spec, tt.baseURL, tt.cfg, tt.env)
			if len(tt.wantErr) > 0 {
				var ue *usageError
				if !errors.As(err, &ue) {
					t.Fatalf("err = %v, want a usage error", err)
				}
				for _, s := range tt.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not mention %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tt.want {
				t.Errorf("target = %s, want %s", got, tt.want)
			}
			if tt.wantURL != "" && got.baseURL != tt.wantURL {
				t.Errorf("base URL = %q, want %q", got.baseURL, tt.wantURL)
			}
			if got.apiKey != "" && strings.Contains(got.String(), got.apiKey) {
				t.Errorf("String() = %q leaks the key", got)
			}
		})
	}
}
