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
	"github.com/reinhq/rein/provider/internal/wirebody"
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
//
// Request bodies are built incrementally: each message is encoded once and
// kept, and a request is the kept prefix plus the newest messages. A
// message is taken to be unchanged while its Parts slice is the same one
// (same first element and length) as in the previous request; whatever
// edits a message must give it new parts, as the llm.Request contract's
// "must not be modified" implies. A Model keeps the encodings of each
// conversation it serves, told apart by their first message, so
// conversations sharing one Model do not undo each other's: up to 32 at
// once, none unused for 512 requests, and few that made a single request
// (a caller that builds its messages anew each time makes a new one for
// every request).
type Model struct {
	client   sdk.Client
	provider string
	cfg      buildConfig
	convs    wirebody.Conversations[bodyCache]
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
		// Requests sent through Client.Post have no SDK span; this spares
		// each one the look-up of a tracer it would not use.
		option.WithOpenTelemetryTraces(false),
	}
	if o.BaseURL != "" {
		ropts = append(ropts, option.WithBaseURL(strings.TrimRight(o.BaseURL, "/")+"/"))
	}
	if o.HTTPClient != nil {
		ropts = append(ropts, option.WithHTTPClient(o.HTTPClient))
	}
	// Installed once here, not per request: a streamed body's length.
	ropts = append(ropts, option.WithMiddleware(wirebody.Sized))
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
// this Model's defaults and decoded into the SDK's types.
func (m *Model) Params(req *llm.Request) (sdk.MessageNewParams, error) {
	return buildParams(req, m.cfg)
}

// Stream sends req to the Messages API with streaming on and yields the
// response as chunks. Nothing is sent until the caller ranges. Breaking out
// of the loop closes the response body. A provider failure is an
// *llm.ProviderError; a cancelled ctx ends the stream with ctx's error.
func (m *Model) Stream(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
	return func(yield func(llm.Chunk, error) bool) {
		conv := m.convs.Lock(req)
		body, err := build(&conv.Cache, req, m.cfg, false)
		conv.Unlock()
		if err != nil {
			yield(nil, err)
			return
		}
		var resp *http.Response
		err = m.client.Post(ctx, "v1/messages", body.Reader(), &resp)
		if err != nil {
			if resp != nil && resp.Body != nil {
				resp.Body.Close()
			}
			yield(nil, m.mapError(ctx, err))
			return
		}
		defer resp.Body.Close()
		asked := names{model: req.Model, tools: req.Tools}
		if asked.model == "" {
			asked.model = m.cfg.model
		}
		d := decoder{provider: m.provider, requestID: resp.Header.Get("request-id"), asked: asked}
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
	body, err := build(new(bodyCache), req, m.cfg, true)
	if err != nil {
		return 0, err
	}
	var res sdk.MessageTokensCount
	if err := m.client.Post(ctx, "v1/messages/count_tokens", body.Bytes(), &res); err != nil {
		return 0, m.mapError(ctx, err)
	}
	return res.InputTokens, nil
}
