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
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/mcp"
)

// conformanceFailures are the client scenarios rein does not pass, and
// why. The test fails when another scenario fails, and when one of these
// passes (so the list, and the README's copy of it, stay true).
var conformanceFailures = map[string]string{}

// conformanceSuite returns the suite's command line (its Node.js first on
// PATH), skipping the test when it is not installed.
func conformanceSuite(t *testing.T) (bin string, env []string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "conformance", "node_modules", ".bin"))
	if err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, "conformance")
	if _, err := os.Stat(bin); err != nil {
		t.Skip("the MCP conformance suite is not installed; run: npm ci --prefix mcp/testdata/conformance")
	}
	if _, err := os.Stat(filepath.Join(dir, "node")); err != nil {
		t.Skip("the suite's Node.js is not installed; run: npm ci --prefix mcp/testdata/conformance")
	}
	return bin, append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// clientScenarios lists the suite's client scenarios.
func clientScenarios(t *testing.T, bin string, env []string) []string {
	cmd := exec.Command(bin, "list", "--client")
	cmd.Env = env
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("conformance list: %v", err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok {
			names = append(names, strings.Fields(name)[0])
		}
	}
	if len(names) == 0 {
		t.Fatalf("conformance list printed no scenarios:\n%s", out)
	}
	return names
}

// runConformance runs every client scenario with client as the command and
// checks the outcome against failures.
func runConformance(t *testing.T, client string, clientEnv []string, failures map[string]string) {
	bin, env := conformanceSuite(t)
	env = append(env, clientEnv...)
	var passed, failed []string
	for _, sc := range clientScenarios(t, bin, env) {
		out, ok := runScenario(bin, env, client, sc)
		if !ok { // sse-retry times reconnections to the millisecond: a loaded machine gets a second try
			out, ok = runScenario(bin, env, client, sc)
		}
		if ok {
			passed = append(passed, sc)
		} else {
			failed = append(failed, sc)
		}
		why, expected := failures[sc]
		switch {
		case !ok && !expected:
			t.Errorf("scenario %s failed:\n%s", sc, tail(out, 60))
		case ok && expected:
			t.Errorf("scenario %s passes now; take it off the list of failures (%s)", sc, why)
		case !ok:
			t.Logf("scenario %s fails, as known: %s", sc, why)
		}
	}
	t.Logf("conformance: %d passed: %s", len(passed), strings.Join(passed, " "))
	t.Logf("conformance: %d failed: %s", len(failed), strings.Join(failed, " "))
}

// runScenario runs one scenario and reports its output and whether it
// passed.
func runScenario(bin string, env []string, client, scenario string) (string, bool) {
	cmd := exec.Command(bin, "client", "--command", client, "--scenario", scenario, "--timeout", "20000")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	return string(out), err == nil
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

func TestConformanceLibrary(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	runConformance(t, exe, []string{"REIN_MCP_CONFORMANCE=library"}, conformanceFailures)
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
