package main

import (
	"fmt"
	"os"
	"strings"
)

// provider describes one value of --model's PROVIDER part.
type provider struct {
	name         string
	keyEnv       string // "" for local servers that need no key
	baseURLEnv   string
	defaultURL   string // "" means the SDK's default
	defaultModel string
	wire         string // anthropic, chat, responses
}

var providers = []provider{
	{name: "anthropic", keyEnv: "ANTHROPIC_API_KEY", baseURLEnv: "ANTHROPIC_BASE_URL", defaultModel: "claude-sonnet-4-5", wire: "anthropic"},
	{name: "openai", keyEnv: "OPENAI_API_KEY", baseURLEnv: "OPENAI_BASE_URL", defaultModel: "gpt-5", wire: "chat"},
	{name: "openai-responses", keyEnv: "OPENAI_API_KEY", baseURLEnv: "OPENAI_BASE_URL", defaultModel: "gpt-5", wire: "responses"},
	{name: "deepseek", keyEnv: "DEEPSEEK_API_KEY", defaultURL: "https://api.deepseek.com", defaultModel: "deepseek-chat", wire: "chat"},
	{name: "openrouter", keyEnv: "OPENROUTER_API_KEY", defaultURL: "https://openrouter.ai/api/v1", defaultModel: "anthropic/claude-sonnet-4.5", wire: "chat"},
	{name: "ollama", defaultURL: "http://localhost:11434/v1", wire: "chat"},
	{name: "openai-compatible", wire: "chat"},
}

func lookupProvider(name string) (provider, bool) {
	for _, p := range providers {
		if p.name == name {
			return p, true
		}
	}
	return provider{}, false
}

// target is a resolved model: which provider, which model, where, with what key.
type target struct {
	provider provider
	model    string
	baseURL  string
	apiKey   string // never printed
}

// String is PROVIDER/MODEL; it never includes the key.
func (t target) String() string { return t.provider.name + "/" + t.model }

// resolveTarget turns --model, --base-url and the config into a target.
// With no model anywhere it picks the first provider whose key is set.
func resolveTarget(spec, baseURL string, cfg *config, getenv func(string) string) (target, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	if spec == "" && cfg != nil {
		spec = cfg.Model
	}
	if spec == "" {
		for _, p := range providers {
			if p.keyEnv != "" && getenv(p.keyEnv) != "" && p.name != "openai-responses" {
				spec = p.name + "/" + p.defaultModel
				break
			}
		}
	}
	if spec == "" {
		return target{}, usageErrorf("%s", noModelHelp)
	}
	spec = expandModel(spec)
	name, model, _ := strings.Cut(spec, "/")
	p, ok := lookupProvider(name)
	if !ok {
		return target{}, usageErrorf("--model %q: unknown provider %q; use one of %s (e.g. --model anthropic/claude-sonnet-4-5), a model 'rein models' lists, or one of %s", spec, name, providerNames(), strings.Join(familyNames(), ", "))
	}
	if model == "" {
		model = p.defaultModel
	}
	if model == "" {
		return target{}, usageErrorf("--model %q: name the model, e.g. --model %s/llama3.2", spec, p.name)
	}
	t := target{provider: p, model: model}

	var pc providerConfig
	if cfg != nil {
		pc = cfg.Providers[p.name]
	}
	switch {
	case baseURL != "":
		t.baseURL = baseURL
	case p.baseURLEnv != "" && getenv(p.baseURLEnv) != "":
		t.baseURL = getenv(p.baseURLEnv)
	case pc.BaseURL != "":
		t.baseURL = pc.BaseURL
	default:
		t.baseURL = p.defaultURL
	}
	if p.name == "openai-compatible" && t.baseURL == "" {
		return target{}, usageErrorf("--model %s needs the server's address: add --base-url http://HOST:PORT/v1", spec)
	}

	keyEnv := p.keyEnv
	if pc.KeyEnv != "" {
		keyEnv = pc.KeyEnv
	}
	if keyEnv != "" {
		t.apiKey = getenv(keyEnv)
		if t.apiKey == "" {
			return target{}, usageErrorf("--model %s needs an API key: export %s=<your key>\n"+
				"(or use a local server with --model ollama/<name>, or try rein offline with 'rein replay examples/sessions/hello.ndjson')", spec, keyEnv)
		}
	}
	return t, nil
}

func providerNames() string {
	names := make([]string, len(providers))
	for i, p := range providers {
		names[i] = p.name
	}
	return strings.Join(names, ", ")
}

var noModelHelp = fmt.Sprintf(`no model is configured and no API key was found. Fix it in one of these ways:
  export ANTHROPIC_API_KEY=<key>      rein then uses anthropic/claude-sonnet-4-5
  export OPENAI_API_KEY=<key>         rein then uses openai/gpt-5
  export DEEPSEEK_API_KEY=<key>       or OPENROUTER_API_KEY=<key>
  --model ollama/<name>               a local Ollama server, no key needed
  --model openai-compatible/<name> --base-url URL   any OpenAI-compatible server
  rein replay examples/sessions/hello.ndjson        watch rein work offline
A default model can also be set as model = "PROVIDER/NAME" in %s`, "$XDG_CONFIG_HOME/rein/config.toml")
