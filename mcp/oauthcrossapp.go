package mcp

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// IdentityProvider configures GrantCrossApp: the enterprise identity
// provider the person signed in with, which vouches for them to the MCP
// server's authorization server.
type IdentityProvider struct {
	// Issuer is the identity provider's issuer URL; its token endpoint is
	// discovered from it unless TokenEndpoint is set.
	Issuer, TokenEndpoint string
	// ClientID and ClientSecret identify rein to the identity provider
	// (the secret is empty for a public client).
	ClientID, ClientSecret string
	// IDToken returns the person's OpenID Connect ID token from that
	// identity provider, signing them in as needed. Required.
	IDToken func(ctx context.Context) (string, error)
}

// crossApp is enterprise-managed authorization: the person's ID token is
// exchanged at the identity provider for an identity assertion grant for
// the MCP server (RFC 8693 token exchange), which the server's
// authorization server turns into an access token (RFC 7523 JWT bearer
// grant). The server's authorization server and resource are discovered
// at the first challenge.
type crossApp struct {
	idp    *IdentityProvider
	client *oauthex.ClientCredentials // rein at the MCP server's authorization server
	http   *http.Client

	mu  sync.Mutex
	src oauth2.TokenSource
}

func (c *crossApp) TokenSource(context.Context) (oauth2.TokenSource, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.src, nil
}

func (c *crossApp) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	challenges, prm, asm, err := challenged(ctx, req, resp, c.http)
	if err != nil {
		return fmt.Errorf("cross-app access: the MCP server's %w", err)
	}
	if asm == nil {
		return fmt.Errorf("cross-app access: the MCP server's authorization server %s publishes no metadata", prm.AuthorizationServers[0])
	}
	endpoint := c.idp.TokenEndpoint
	if endpoint == "" {
		meta, err := auth.GetAuthServerMetadata(ctx, c.idp.Issuer, c.http)
		if err != nil || meta == nil {
			return fmt.Errorf("cross-app access: the identity provider's metadata: %v; set its token endpoint", err)
		}
		endpoint = meta.TokenEndpoint
	}
	idToken, err := c.idp.IDToken(ctx)
	if err != nil {
		return fmt.Errorf("cross-app access: the ID token: %w", err)
	}
	idp := &oauthex.ClientCredentials{ClientID: c.idp.ClientID}
	if c.idp.ClientSecret != "" {
		idp.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: c.idp.ClientSecret}
	}
	scopes := strings.Fields(challengeParam(challenges, "scope"))
	if len(scopes) == 0 {
		scopes = prm.ScopesSupported
	}
	grant, err := oauthex.ExchangeToken(ctx, endpoint, &oauthex.TokenExchangeRequest{
		RequestedTokenType: oauthex.TokenTypeIDJAG, Audience: asm.Issuer, Resource: prm.Resource, Scope: scopes,
		SubjectToken: idToken, SubjectTokenType: oauthex.TokenTypeIDToken,
	}, idp, c.http)
	if err != nil {
		return fmt.Errorf("cross-app access: token exchange at the identity provider: %w", err)
	}
	cfg := &oauth2.Config{ClientID: c.client.ClientID, Scopes: scopes,
		Endpoint: oauth2.Endpoint{TokenURL: asm.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams}}
	if c.client.ClientSecretAuth != nil {
		cfg.ClientSecret = c.client.ClientSecretAuth.ClientSecret
		if slices.Contains(asm.TokenEndpointAuthMethodsSupported, "client_secret_basic") {
			cfg.Endpoint.AuthStyle = oauth2.AuthStyleInHeader
		}
	}
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, c.http), "",
		oauth2.SetAuthURLParam("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"),
		oauth2.SetAuthURLParam("assertion", grant.AccessToken))
	if err != nil {
		return fmt.Errorf("cross-app access: the JWT bearer grant: %w", err)
	}
	c.mu.Lock()
	c.src = oauth2.StaticTokenSource(tok)
	c.mu.Unlock()
	return nil
}
