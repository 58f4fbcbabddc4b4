package anthropic

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"os"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/reinhq/rein/llm"
)

// ErrNoAPIKey is returned by New when neither Options.APIKey nor the
// ANTHROPIC_API_KEY environment variable holds a key.
var ErrNoAPIKey = errors.New("anthropic: no API key: set ANTHROPIC_API_KEY or Options.APIKey")

// DefaultMaxTokens is the max_tokens sent when neither the request nor
// Options sets one. The Messages API requires the field.
const DefaultMaxTokens = 8192

// Options configures a Model. A nil *Options, and every zero field, means
// the documented default.
type Options struct {
	// APIKey authenticates requests. Default: $ANTHROPIC_API_KEY.
	APIKey string
	// BaseURL is the API root, e.g. "https://api.anthropic.com".
	// Default: $ANTHROPIC_BASE_URL, else the SDK's production URL.
	BaseURL string
	// HTTPClient sends the requests. Default: http.DefaultClient.
	HTTPClient *http.Client
	// Headers are added to every request (for example "anthropic-beta").
	Headers map[string]string
	// Provider names the provider in Provenance and errors.
	// Default: "anthropic".
	Provider string
	// Model is used when a Request leaves Model empty.
	Model string
	// DefaultMaxTokens is max_tokens when a Request leaves MaxTokens zero.
	// Default: DefaultMaxTokens.
	DefaultMaxTokens int
}

// Model is an llm.Model (and llm.TokenCounter) speaking the Anthropic
// Messages API. It is safe for concurrent use.
type Model struct {
	client   sdk.Client
	provider string
	cfg      buildConfig
}

var (
	_ llm.Model        = (*Model)(nil)
	_ llm.TokenCounter = (*Model)(nil)
)

// New returns a Model configured by opts (nil for all defaults). It fails
// with ErrNoAPIKey when no key is configured. The SDK's own retries are
// off: retry policy belongs to the caller.
func New(opts *Options) (*Model, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.APIKey == "" {
		o.APIKey = os.Getenv("ANTHROPIC_API_KEY")
	}
	if o.APIKey == "" {
		return nil, ErrNoAPIKey
	}
	if o.BaseURL == "" {
		o.BaseURL = os.Getenv("ANTHROPIC_BASE_URL")
	}
	if o.Provider == "" {
		o.Provider = "anthropic"
	}
	if o.DefaultMaxTokens < 0 {
		return nil, fmt.Errorf("anthropic: Options.DefaultMaxTokens is %d; use a positive number or 0 for the default", o.DefaultMaxTokens)
	}
	if o.DefaultMaxTokens == 0 {
		o.DefaultMaxTokens = DefaultMaxTokens
	}
	ropts := []option.RequestOption{
		// The environment is read here, once, not by the SDK on its own terms.
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(o.APIKey),
		option.WithMaxRetries(0),
	}
	if o.BaseURL != "" {
		ropts = append(ropts, option.WithBaseURL(strings.TrimRight(o.BaseURL, "/")+"/"))
	}
	if o.HTTPClient != nil {
		ropts = append(ropts, option.WithHTTPClient(o.HTTPClient))
	}
	for k, v := range o.Headers {
		ropts = append(ropts, option.WithHeader(k, v))
	}
	return &Model{
		client:   sdk.NewClient(ropts...),
		provider: o.Provider,
		cfg:      buildConfig{provider: o.Provider, model: o.Model, maxTokens: o.DefaultMaxTokens},
	}, nil
}

// Params returns the request body Stream would send for req, built with
// this Model's defaults.
func (m *Model) Params(req *llm.Request) (sdk.MessageNewParams, error) {
	return buildParams(req, m.cfg)
}

// Stream sends req to the Messages API with streaming on and yields the
// response as chunks. Nothing is sent until the caller ranges. Breaking out
// of the loop closes the response body. A provider failure is an
// *llm.ProviderError; a cancelled ctx ends the stream with ctx's error.
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		params, err := buildParams(req, m.cfg)
		if err != nil {
			yield(nil, err)
			return
		}
		var resp *http.Response
		err = m.client.Post(ctx, "v1/messages", params, &resp, option.WithJSONSet("stream", true))
		if err != nil {
			if resp != nil && resp.Body != nil {
				resp.Body.Close()
			}
			yield(nil, m.mapError(ctx, err))
			return
		}
		defer resp.Body.Close()
		d := decoder{provider: m.provider, requestID: resp.Header.Get("request-id")}
		stopped := false
		err = d.decode(resp.Body, func(c llm.Chunk) bool {
			if !yield(c, nil) {
				stopped = true
				return false
			}
			return true
		})
		if err != nil && !stopped {
			err = m.mapError(ctx, err)
			var pe *llm.ProviderError
			if errors.As(err, &pe) && pe.RequestID == "" {
				pe.RequestID = d.requestID
			}
			yield(nil, err)
		}
	}
}

// CountTokens returns the input tokens req would use, from the Messages
// API's count_tokens endpoint. Sampling fields do not affect the count.
func (m *Model) CountTokens(ctx context.Context, req *llm.Request) (int64, error) {
	p, err := buildParams(req, m.cfg)
	if err != nil {
		return 0, err
	}
	cp := sdk.MessageCountTokensParams{
		Messages:     p.Messages,
		Model:        p.Model,
		OutputConfig: p.OutputConfig,
		Thinking:     p.Thinking,
		ToolChoice:   p.ToolChoice,
	}
	if len(p.System) > 0 {
		cp.System.OfTextBlockArray = p.System
	}
	for _, t := range p.Tools {
		cp.Tools = append(cp.Tools, sdk.MessageCountTokensToolUnionParam{OfTool: t.OfTool})
	}
	res, err := m.client.Messages.CountTokens(ctx, cp)
	if err != nil {
		return 0, m.mapError(ctx, err)
	}
	return res.InputTokens, nil
}
