//go:build unix

package main

// The MCP conformance suite's client scenarios, run against the rein
// command: the suite runs this test binary as its client
// (REIN_CONFORMANCE_ROLE=cli), which does what a person would with rein —
// 'rein mcp login', then 'rein mcp call' (again after a login for a wider
// scope). As $BROWSER the binary plays the browser. Install the suite
// with: npm ci --prefix mcp/testdata/conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/mcp/mcptest"
)

// cliConformanceFailures are the client scenarios the rein command does
// not pass, and why (the README says the same).
var cliConformanceFailures = map[string]string{
	"elicitation-sep1034-client-defaults": "rein asks for a server's input at a terminal, and the suite runs it without one, so rein declines",
}

func init() {
	switch os.Getenv("REIN_CONFORMANCE_ROLE") {
	case "cli":
		if err := cliConformanceClient(os.Args[len(os.Args)-1]); err != nil {
			fmt.Fprintln(os.Stderr, "rein conformance client:", err)
			os.Exit(1)
		}
		os.Exit(0)
	case "browser": // follow the authorization URL back to rein's redirect listener
		if resp, err := http.Get(os.Args[len(os.Args)-1]); err == nil {
			resp.Body.Close()
		}
		os.Exit(0)
	}
}

func TestConformanceCLI(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	mcptest.RunConformance(t, &mcptest.ConformanceRequest{Suite: filepath.Join("..", "..", "mcp", "testdata", "conformance"), Client: exe,
		Env: []string{"REIN_CONFORMANCE_ROLE=cli", "REIN_CONFORMANCE_REIN=" + reinBin}, Failures: cliConformanceFailures})
}

// cliConformanceClient does a scenario's part with the rein command.
func cliConformanceClient(url string) error {
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var sc map[string]string
	_ = json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &sc)
	home, err := os.MkdirTemp("", "rein-conformance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	exe, _ := os.Executable()
	env := append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"XDG_STATE_HOME="+filepath.Join(home, "state"), "BROWSER="+exe, "REIN_CONFORMANCE_ROLE=browser")
	spec, err := serverSpec(url, scenario, sc, home)
	if err != nil {
		return err
	}
	rein := func(args ...string) (string, error) {
		cmd := exec.Command(os.Getenv("REIN_CONFORMANCE_REIN"), append(args, "--mcp", spec, "-C", home)...)
		cmd.Env, cmd.Stdin = env, strings.NewReader("")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		fmt.Fprintf(os.Stderr, "$ rein %s\n%s", strings.Join(args, " "), out.String())
		return out.String(), err
	}
	tool, args := "", "{}"
	switch {
	case scenario == "initialize":
		_, err := rein("mcp", "list", "--json")
		return err
	case scenario == "tools_call":
		tool, args = "add_numbers", `{"a":5,"b":3}`
	case scenario == "elicitation-sep1034-client-defaults":
		tool = "test_client_elicitation_defaults"
	case scenario == "sse-retry":
		tool = "test_reconnection"
	case strings.HasPrefix(scenario, "auth/"):
		tool = "test-tool"
		if !strings.Contains(spec, "grant=") { // a person's login first
			if _, err := rein("mcp", "login", "conformance"); err != nil {
				return err
			}
		}
	}
	out, err := rein("mcp", "call", "conformance", tool, args)
	if err != nil && strings.Contains(out, "rein mcp login") { // a wider scope: log in again, call again
		if _, err := rein("mcp", "login", "conformance"); err != nil {
			return err
		}
		_, err = rein("mcp", "call", "conformance", tool, args)
		return err
	}
	return err
}

// serverSpec is the --mcp value for a scenario's server.
func serverSpec(url, scenario string, sc map[string]string, dir string) (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	opts := []string{"conformance=" + url, fmt.Sprintf("redirect_url=http://127.0.0.1:%d/callback", port),
		"client_metadata_url=https://conformance-test.local/client-metadata.json"}
	add := func(key, ctxKey string) {
		if v := sc[ctxKey]; v != "" {
			opts = append(opts, key+"="+v)
		}
	}
	add("client_id", "client_id")
	add("client_secret", "client_secret")
	switch {
	case strings.HasPrefix(scenario, "auth/client-credentials"):
		opts = append(opts, "grant=client_credentials")
		if pemKey := sc["private_key_pem"]; pemKey != "" {
			path := filepath.Join(dir, "client-key.pem")
			if err := os.WriteFile(path, []byte(pemKey), 0o600); err != nil {
				return "", err
			}
			opts = append(opts, "private_key_file="+path)
		}
	case strings.HasPrefix(scenario, "auth/cross-app-access"):
		opts = append(opts, "grant=cross_app")
		add("idp_issuer", "idp_issuer")
		add("idp_client_id", "idp_client_id")
		add("idp_token_endpoint", "idp_token_endpoint")
		add("id_token", "idp_id_token")
	}
	for _, o := range opts {
		if strings.ContainsAny(o, " '\"\\$") {
			return "", errors.New("a scenario value needs quoting: " + o)
		}
	}
	return strings.Join(opts, " "), nil
}
