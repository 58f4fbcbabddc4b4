package mcp

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/oauth2"
)

// savedToken is the token file: the token plus what refreshing it needs.
// It holds secrets and is written with mode 0600.
type savedToken struct {
	// Resource is the server URL the token was issued for; a token is
	// never sent to another URL, even under the same server name.
	Resource     string        `json:"resource"`
	ClientID     string        `json:"client_id"`
	ClientSecret string        `json:"client_secret,omitempty"`
	AuthURL      string        `json:"auth_url"`
	TokenURL     string        `json:"token_url"`
	AuthStyle    int           `json:"auth_style,omitempty"`
	RedirectURL  string        `json:"redirect_url,omitempty"`
	Scopes       []string      `json:"scopes,omitempty"`
	Token        *oauth2.Token `json:"token"`
	// StepUpScopes are wider scopes the server asked for (403
	// insufficient_scope) since this token was issued; the next login
	// requests them.
	StepUpScopes []string `json:"step_up_scopes,omitempty"`
}

// savingSource writes refreshed tokens back to the token file.
type savingSource struct {
	mu    sync.Mutex
	src   oauth2.TokenSource
	path  string
	saved *savedToken
}

func (s *savingSource) Token() (*oauth2.Token, error) {
	tok, err := s.src.Token()
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.saved.Token == nil || tok.AccessToken != s.saved.Token.AccessToken {
		s.saved.Token = tok
		_ = saveToken(s.path, s.saved) // a failed save costs a login later, not this call
	}
	return tok, nil
}

func loadToken(path string) (*savedToken, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var t savedToken
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if t.Token == nil {
		return nil, fmt.Errorf("%s: no token", path)
	}
	return &t, nil
}

// saveToken writes the token file atomically, readable by the owner only.
func saveToken(path string, t *savedToken) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("mcp: saving OAuth token: %w", err)
	}
	b, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".token-*")
	if err != nil {
		return fmt.Errorf("mcp: saving OAuth token: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("mcp: saving OAuth token: %w", err)
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("mcp: saving OAuth token: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("mcp: saving OAuth token: %w", err)
	}
	return os.Rename(tmp.Name(), path)
}
