package mcp

import "github.com/modelcontextprotocol/go-sdk/auth"

// OAuthConfig enables OAuth for an HTTP server.
type OAuthConfig struct {
	// ClientID and ClientSecret identify a client registered with the
	// server's authorization server beforehand; when ClientID is empty,
	// rein registers itself dynamically.
	ClientID     string
	ClientSecret string
	// RedirectURL is where the authorization server sends the browser
	// back; empty means http://127.0.0.1:8765/callback.
	RedirectURL string
}

type oauthState struct{}

func (m *Manager) oauthHandler(s *server) (auth.OAuthHandler, error) {
	return nil, nil
}
