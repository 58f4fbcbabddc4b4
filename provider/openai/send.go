package openai

import (
	"context"
	"net/http"

	"github.com/openai/openai-go/v3/option"

	"github.com/reinhq/rein/provider/internal/wirebody"
)

// post sends body to path and returns the streaming response with its body
// unread. A non-2xx status becomes a *llm.ProviderError; a failure to
// connect becomes a transport error, or the context's error when the
// context ended first.
func (c *config) post(ctx context.Context, path string, body wirebody.Body) (*http.Response, error) {
	var res *http.Response
	err := c.client.Post(ctx, path, body.Reader(), &res,
		option.WithHeader("Accept", "text/event-stream"),
		option.WithResponseInto(&res))
	if ctx.Err() != nil {
		if res != nil && res.Body != nil {
			res.Body.Close()
		}
		return nil, ctx.Err()
	}
	if res != nil && res.StatusCode >= 300 {
		// The SDK's own error value is not kept: the body says more, and
		// nothing of the request (its headers carry the key) is needed.
		return nil, httpError(c.provider, res, nil)
	}
	if err != nil {
		if res != nil && res.Body != nil {
			res.Body.Close()
		}
		return nil, transportError(ctx, c.provider, "", err)
	}
	return res, nil
}
