package mcp

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// legacyIssuer is the HTTP transport of a server's OAuth discovery. It
// makes the 2025-03-26 fallback work: a server with no protected-resource
// metadata is its own authorization server, found at its origin, and the
// servers of that revision often name a different issuer (such as
// ORIGIN/oauth) in their metadata. Only then, and only for metadata served
// by the MCP server's own origin, is the issuer read as that origin: the
// issuer check guards against a client being sent to another server's
// metadata, which cannot happen when the metadata comes from the server
// itself.
type legacyIssuer struct {
	base   http.RoundTripper
	origin string // the MCP server's scheme://host

	mu       sync.Mutex
	resource bool // protected-resource metadata was found since reset
}

// reset starts a new discovery.
func (t *legacyIssuer) reset() {
	t.mu.Lock()
	t.resource = false
	t.mu.Unlock()
}

func (t *legacyIssuer) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	path := req.URL.Path
	if strings.HasPrefix(path, "/.well-known/oauth-protected-resource") {
		t.mu.Lock()
		t.resource = true
		t.mu.Unlock()
		return resp, nil
	}
	t.mu.Lock()
	found := t.resource
	t.mu.Unlock()
	root := path == "/.well-known/oauth-authorization-server" || path == "/.well-known/openid-configuration"
	if found || !root || origin(req.URL) != t.origin {
		return resp, nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	var meta map[string]any
	if json.Unmarshal(body, &meta) == nil {
		if iss, _ := meta["issuer"].(string); iss != "" && iss != t.origin {
			meta["issuer"] = t.origin
			if fixed, err := json.Marshal(meta); err == nil {
				body = fixed
			}
		}
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return resp, nil
}

// origin is u's scheme://host.
func origin(u *url.URL) string {
	return (&url.URL{Scheme: u.Scheme, Host: u.Host}).String()
}
