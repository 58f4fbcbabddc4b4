//go:build unix

package mcp_test

// The MCP conformance suite's client scenarios, run against the Manager:
// the suite starts a scenario's servers and runs this test binary as the
// client (REIN_MCP_CONFORMANCE=library), which connects through the
// Manager, answers what the scenario asks and calls its tool. Install the
// suite, and the Node.js it needs, with:
//
//	npm ci --prefix mcp/testdata/conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/mcp"
	"github.com/reinhq/rein/mcp/mcptest"
)

// conformanceFailures are the client scenarios rein does not pass, and
// why. The test fails when another scenario fails, and when one of these
// passes (so the list, and the README's copy of it, stay true).
var conformanceFailures = map[string]string{}

func TestConformanceLibrary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mcptest.RunConformance(t, &mcptest.ConformanceRequest{Suite: filepath.Join("testdata", "conformance"), Client: exe,
		Env: []string{"REIN_MCP_CONFORMANCE=library"}, Failures: conformanceFailures})
}

// conformanceClient is the test binary as the suite's client: it connects
// to url through a Manager and does what the scenario asks.
func conformanceClient(url string) error {
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var sc map[string]string
	_ = json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &sc) // absent for most scenarios
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", l.Addr().(*net.TCPAddr).Port)
	l.Close()
	oauth := &mcp.OAuthConfig{ClientID: sc["client_id"], ClientSecret: sc["client_secret"], RedirectURL: redirect,
		ClientMetadataURL: "https://conformance-test.local/client-metadata.json"}
	if strings.HasPrefix(scenario, "auth/cross-app-access") {
		oauth.Grant = mcp.GrantCrossApp
		oauth.IdP = &mcp.IdentityProvider{Issuer: sc["idp_issuer"], ClientID: sc["idp_client_id"], TokenEndpoint: sc["idp_token_endpoint"],
			IDToken: func(context.Context) (string, error) { return sc["idp_id_token"], nil }}
	}
	if strings.HasPrefix(scenario, "auth/client-credentials") {
		oauth.Grant = mcp.GrantClientCredentials
		oauth.PrivateKeyPEM = sc["private_key_pem"]
	}
	state, err := os.MkdirTemp("", "rein-conformance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(state)
	m, err := mcp.New(&mcp.Options{
		Servers:  []mcp.ServerConfig{{Name: "conformance", URL: url, OAuth: oauth}},
		StateDir: state,
		// The scenario's authorization server redirects at once; following
		// it plays the browser.
		OpenAuthURL: func(ctx context.Context, server, u string) error {
			go func() {
				if resp, err := http.Get(u); err == nil {
					resp.Body.Close()
				}
			}()
			return nil
		},
		// A person who accepts the form as it comes: the schema's
		// defaults fill it.
		Elicit: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{}}, nil
		},
	})
	if err != nil {
		return err
	}
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := m.Warmup(ctx); err != nil {
		return err
	}
	name, args := conformanceTool(scenario)
	if name == "" {
		return nil
	}
	res, err := m.Call(ctx, "conformance", name, json.RawMessage(args))
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("%s: %s", name, res.TextOf())
	}
	return nil
}

// conformanceTool is the tool a scenario expects to be called, if any.
func conformanceTool(scenario string) (name, args string) {
	switch {
	case scenario == "tools_call":
		return "add_numbers", `{"a":5,"b":3}`
	case scenario == "elicitation-sep1034-client-defaults":
		return "test_client_elicitation_defaults", `{}`
	case scenario == "sse-retry":
		return "test_reconnection", `{}`
	case strings.HasPrefix(scenario, "auth/"):
		return "test-tool", `{}`
	}
	return "", ""
}
