package mcp

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// jwtCredentials is the client-credentials grant with private_key_jwt
// client authentication (RFC 7523): rein proves it holds the client's
// private key by signing a short-lived assertion for each token request.
type jwtCredentials struct {
	clientID string
	key      crypto.Signer
	alg      string // ES256 or RS256
	client   *http.Client

	mu  sync.Mutex
	src oauth2.TokenSource
}

// newJWTCredentials parses a PKCS#8 (or SEC 1, PKCS#1) PEM private key.
func newJWTCredentials(clientID, keyPEM string, client *http.Client) (*jwtCredentials, error) {
	block, _ := pem.Decode([]byte(keyPEM))
	if block == nil {
		return nil, errors.New("the private key is not PEM; give the client's key as -----BEGIN PRIVATE KEY-----")
	}
	var key any
	var err error
	switch block.Type {
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	}
	if err != nil {
		return nil, fmt.Errorf("the private key: %w", err)
	}
	if client == nil {
		client = http.DefaultClient
	}
	j := &jwtCredentials{clientID: clientID, client: client}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		if k.Curve.Params().BitSize != 256 {
			return nil, errors.New("the private key: only P-256 EC keys (ES256) are supported")
		}
		j.key, j.alg = k, "ES256"
	case *rsa.PrivateKey:
		j.key, j.alg = k, "RS256"
	default:
		return nil, fmt.Errorf("the private key: %T keys are not supported; use EC P-256 or RSA", key)
	}
	return j, nil
}

// TokenSource returns the last token obtained, if any.
func (j *jwtCredentials) TokenSource(context.Context) (oauth2.TokenSource, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.src, nil
}

// Authorize discovers the token endpoint from the server's metadata and
// asks it for a token with a signed assertion.
func (j *jwtCredentials) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	challenges, prm, asm, err := challenged(ctx, req, resp, j.client)
	if err != nil {
		return err
	}
	if asm == nil {
		base := prm.AuthorizationServers[0]
		asm = &oauthex.AuthServerMeta{Issuer: base, TokenEndpoint: base + "/token"}
	}
	assertion, err := j.assertion(asm.Issuer)
	if err != nil {
		return err
	}
	form := url.Values{"grant_type": {"client_credentials"}, "client_id": {j.clientID},
		"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"}, "client_assertion": {assertion}}
	scopes := strings.Fields(challengeParam(challenges, "scope"))
	if len(scopes) == 0 {
		scopes = prm.ScopesSupported
	}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	if prm.Resource != "" {
		form.Set("resource", prm.Resource)
	}
	tok, err := postToken(ctx, j.client, asm.TokenEndpoint, form)
	if err != nil {
		return err
	}
	j.mu.Lock()
	j.src = oauth2.StaticTokenSource(tok)
	j.mu.Unlock()
	return nil
}

// assertion signs the JWT that authenticates the client to audience.
func (j *jwtCredentials) assertion(audience string) (string, error) {
	now := time.Now()
	header, _ := json.Marshal(map[string]string{"alg": j.alg, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{"iss": j.clientID, "sub": j.clientID, "aud": audience,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(), "jti": rand.Text()})
	enc := base64.RawURLEncoding
	signing := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	digest := sha256.Sum256([]byte(signing))
	var sig []byte
	switch k := j.key.(type) {
	case *ecdsa.PrivateKey:
		r, s, err := ecdsa.Sign(rand.Reader, k, digest[:])
		if err != nil {
			return "", err
		}
		sig = append(fixed32(r), fixed32(s)...) // JWS wants r||s, not ASN.1
	default:
		var err error
		if sig, err = j.key.Sign(rand.Reader, digest[:], crypto.SHA256); err != nil {
			return "", err
		}
	}
	return signing + "." + enc.EncodeToString(sig), nil
}

func fixed32(n *big.Int) []byte {
	b := make([]byte, 32)
	return n.FillBytes(b)
}

// discoverResource finds a server's protected-resource metadata where the
// challenge points, at the endpoint's path, or at the root.
// challenged reads the 401 an MCP server answered: it drops the body,
// parses the WWW-Authenticate challenges, and finds the protected
// resource's metadata and its first authorization server's (nil when that
// server publishes none).
func challenged(ctx context.Context, req *http.Request, resp *http.Response, c *http.Client) ([]oauthex.Challenge, *oauthex.ProtectedResourceMetadata, *oauthex.AuthServerMeta, error) {
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	prm, err := discoverResource(ctx, challengeParam(challenges, "resource_metadata"), req.URL, c)
	if err != nil {
		return nil, nil, nil, err
	}
	asm, err := auth.GetAuthServerMetadata(ctx, prm.AuthorizationServers[0], c)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("authorization server metadata: %w", err)
	}
	return challenges, prm, asm, nil
}

func discoverResource(ctx context.Context, hinted string, endpoint *url.URL, c *http.Client) (*oauthex.ProtectedResourceMetadata, error) {
	type try struct{ meta, resource string }
	var tries []try
	if hinted != "" {
		tries = append(tries, try{hinted, endpoint.String()})
	}
	root := origin(endpoint)
	tries = append(tries, try{root + "/.well-known/oauth-protected-resource/" + strings.TrimLeft(endpoint.Path, "/"), endpoint.String()},
		try{root + "/.well-known/oauth-protected-resource", root})
	for _, t := range tries {
		prm, err := oauthex.GetProtectedResourceMetadata(ctx, t.meta, t.resource, c)
		if err == nil && prm != nil && len(prm.AuthorizationServers) > 0 {
			return prm, nil
		}
	}
	return &oauthex.ProtectedResourceMetadata{AuthorizationServers: []string{root}, Resource: endpoint.String()}, nil
}

// postToken sends a token request and reads the token.
func postToken(ctx context.Context, c *http.Client, endpoint string, form url.Values) (*oauth2.Token, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return nil, fmt.Errorf("token request: %w", err)
	}
	defer resp.Body.Close()
	var body struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int64  `json:"expires_in"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil {
		return nil, fmt.Errorf("token response (HTTP %d): %w", resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusOK || body.AccessToken == "" {
		return nil, fmt.Errorf("token request refused (HTTP %d): %s %s", resp.StatusCode, body.Error, body.Description)
	}
	tok := &oauth2.Token{AccessToken: body.AccessToken, TokenType: body.TokenType}
	if body.ExpiresIn > 0 {
		tok.Expiry = time.Now().Add(time.Duration(body.ExpiresIn) * time.Second)
	}
	return tok, nil
}
