package openai

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/provider/internal/wirebody"
)

// Provider names understood by Preset and Options.Provider.
const (
	ProviderOpenAI     = "openai"
	ProviderOllama     = "ollama"
	ProviderVLLM       = "vllm"
	ProviderLlamaCpp   = "llama.cpp"
	ProviderDeepSeek   = "deepseek"
	ProviderOpenRouter = "openrouter"
	ProviderCompatible = "openai-compatible"
)

// ErrNoAPIKey is returned by NewChat and NewResponses when the provider
// needs a key and neither Options.APIKey nor its environment variable has
// one. The error's text names the variable to set.
var ErrNoAPIKey = errors.New("openai: no API key")

// ErrNoBaseURL is returned when the openai-compatible provider is used
// without Options.BaseURL.
var ErrNoBaseURL = errors.New("openai: no base URL")

// ErrUnknownProvider is returned by Preset for a name it does not know.
var ErrUnknownProvider = errors.New("openai: unknown provider")

// Options configures a Chat or Responses model. A nil *Options means the
// zero value: OpenAI itself, the key from $OPENAI_API_KEY.
type Options struct {
	// APIKey is sent as a bearer token. Empty means the provider's
	// environment variable ($OPENAI_API_KEY for openai); providers that
	// need no key (local servers) send none.
	APIKey string
	// BaseURL is the API root, e.g. "https://api.openai.com/v1". Empty
	// means $OPENAI_BASE_URL for openai, else the provider's default.
	BaseURL string
	// HTTPClient sends the requests; nil means a client with no overall
	// timeout (streams can be long; cancel with the context).
	HTTPClient *http.Client
	// Headers are added to every request (e.g. OpenRouter's HTTP-Referer).
	Headers map[string]string
	// Provider names the server: one of the Provider constants or any
	// label for an OpenAI-compatible server. It picks defaults and
	// appears in errors and provenance. Empty means "openai".
	Provider string
	// Compat adjusts the wire for a server's quirks; nil means the
	// provider's defaults (see Preset).
	Compat *Compat
	// StrictTools asks for strict function schemas ("strict": true).
	// OpenAI then requires every property to be listed as required and
	// additionalProperties false.
	StrictTools bool
}

// Compat describes how an OpenAI-compatible server differs from OpenAI.
// The zero value is OpenAI's own behaviour.
type Compat struct {
	// MaxTokensField is the request field for Request.MaxTokens in Chat
	// Completions: "max_completion_tokens" (OpenAI, the default) or
	// "max_tokens" (most compatible servers).
	MaxTokensField string
	// DeveloperRole sends the system prompt with role "developer"
	// instead of "system".
	DeveloperRole bool
	// TopK forwards Request.TopK as "top_k" (OpenAI rejects it).
	TopK bool
	// NoStreamUsage leaves out stream_options.include_usage for servers
	// that reject it; usage is then whatever the server volunteers.
	NoStreamUsage bool
	// SendReasoning sends an assistant message's reasoning text back as
	// "reasoning_content" (llama.cpp, DeepSeek tool-call turns).
	SendReasoning bool
}

// providerInfo is what rein knows about one named server.
type providerInfo struct {
	baseURL string
	keyEnv  string
	needKey bool
	compat  Compat
}

var compatDefaults = Compat{MaxTokensField: "max_tokens"}

var knownProviders = map[string]providerInfo{
	ProviderOpenAI:     {baseURL: "https://api.openai.com/v1", keyEnv: "OPENAI_API_KEY", needKey: true, compat: Compat{MaxTokensField: "max_completion_tokens"}},
	ProviderOllama:     {baseURL: "http://localhost:11434/v1", compat: Compat{MaxTokensField: "max_tokens", TopK: true}},
	ProviderVLLM:       {baseURL: "http://localhost:8000/v1", keyEnv: "VLLM_API_KEY", compat: Compat{MaxTokensField: "max_tokens", TopK: true}},
	ProviderLlamaCpp:   {baseURL: "http://localhost:8080/v1", keyEnv: "LLAMA_API_KEY", compat: Compat{MaxTokensField: "max_tokens", TopK: true, SendReasoning: true}},
	ProviderDeepSeek:   {baseURL: "https://api.deepseek.com", keyEnv: "DEEPSEEK_API_KEY", needKey: true, compat: Compat{MaxTokensField: "max_tokens", SendReasoning: true}},
	ProviderOpenRouter: {baseURL: "https://openrouter.ai/api/v1", keyEnv: "OPENROUTER_API_KEY", needKey: true, compat: Compat{MaxTokensField: "max_tokens", TopK: true}},
	ProviderCompatible: {compat: compatDefaults},
}

// Presets lists the provider names Preset accepts, sorted.
func Presets() []string {
	names := make([]string, 0, len(knownProviders))
	for n := range knownProviders {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Preset returns the Options for a named server: its base URL (for openai,
// $OPENAI_BASE_URL when set), provider name and wire quirks. The key is read from the provider's environment
// variable when the model is built, so set APIKey to override it. For
// "openai-compatible" set BaseURL before use.
func Preset(name string) (Options, error) {
	info, ok := knownProviders[name]
	if !ok {
		return Options{}, fmt.Errorf("%w %q; use one of %s", ErrUnknownProvider, name, strings.Join(Presets(), ", "))
	}
	c := info.compat
	base := info.baseURL
	if name == ProviderOpenAI {
		if v := os.Getenv("OPENAI_BASE_URL"); v != "" {
			base = v
		}
	}
	return Options{BaseURL: base, Provider: name, Compat: &c}, nil
}

// config is Options resolved against the environment and presets.
type config struct {
	provider string
	baseURL  string
	compat   Compat
	strict   bool
	client   sdk.Client
}

// resolve applies the documented defaults and builds the SDK client with
// its retries off: the agent loop owns retry policy.
func resolve(o *Options) (*config, error) {
	var opts Options
	if o != nil {
		opts = *o
	}
	name := opts.Provider
	if name == "" {
		name = ProviderOpenAI
	}
	info, known := knownProviders[name]
	if !known {
		info = providerInfo{compat: compatDefaults}
	}
	key := opts.APIKey
	if key == "" && info.keyEnv != "" {
		key = os.Getenv(info.keyEnv)
	}
	if key == "" && info.needKey {
		return nil, fmt.Errorf("%w for %s: set %s or Options.APIKey", ErrNoAPIKey, name, info.keyEnv)
	}
	base := opts.BaseURL
	if base == "" && name == ProviderOpenAI {
		base = os.Getenv("OPENAI_BASE_URL")
	}
	if base == "" {
		base = info.baseURL
	}
	if base == "" {
		return nil, fmt.Errorf("%w for %s: set Options.BaseURL to the server's API root, e.g. http://localhost:8000/v1", ErrNoBaseURL, name)
	}
	compat := info.compat
	if opts.Compat != nil {
		compat = *opts.Compat
	}
	if compat.MaxTokensField == "" {
		compat.MaxTokensField = "max_completion_tokens"
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{}
	}
	ro := []option.RequestOption{
		option.WithBaseURL(base),
		option.WithHTTPClient(hc),
		option.WithMaxRetries(0),
		// Installed once here, not per request: a streamed body's length.
		option.WithMiddleware(wirebody.Sized),
	}
	if key != "" {
		ro = append(ro, option.WithAPIKey(key))
	}
	hk := make([]string, 0, len(opts.Headers))
	for k := range opts.Headers {
		hk = append(hk, k)
	}
	slices.Sort(hk)
	for _, k := range hk {
		ro = append(ro, option.WithHeader(k, opts.Headers[k]))
	}
	// The client is built from our options alone, not sdk.NewClient, so
	// that ambient OPENAI_* variables (a key, an organisation) never reach
	// a server they were not meant for.
	return &config{
		provider: name,
		baseURL:  base,
		compat:   compat,
		strict:   opts.StrictTools,
		client:   sdk.Client{Options: ro},
	}, nil
}

// Both APIs are llm.Models.
var (
	_ llm.Model = (*Chat)(nil)
	_ llm.Model = (*Responses)(nil)
)
