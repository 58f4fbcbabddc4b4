package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/llm/llmtest"
)

func TestCheckServeAddr(t *testing.T) {
	for _, tc := range []struct {
		addr  string
		token bool
		ok    bool
	}{
		{"127.0.0.1:7420", false, true},
		{"localhost:0", false, true},
		{"[::1]:7420", false, true},
		{"0.0.0.0:7420", false, false},
		{":7420", false, false},
		{"192.168.1.5:7420", false, false},
		{"0.0.0.0:7420", true, true},
		{"nonsense", true, false},
	} {
		err := checkServeAddr(tc.addr, tc.token)
		if (err == nil) != tc.ok {
			t.Errorf("checkServeAddr(%q, token %v) = %v, want ok %v", tc.addr, tc.token, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "--addr") {
			t.Errorf("checkServeAddr(%q): %v does not name the flag", tc.addr, err)
		}
	}
}

func TestServeRefusesOpenAddressWithoutToken(t *testing.T) {
	e := newEnv(t)
	r := e.run(nil, "serve", "--addr", "0.0.0.0:0", "--store", "mem:")
	if r.code != exitUsage || !strings.Contains(r.stderr, "REIN_SERVE_TOKEN") {
		t.Fatalf("exit %d, stderr %q: want a usage error naming REIN_SERVE_TOKEN", r.code, r.stderr)
	}
}

func TestServeRefusesNegativeIdleTimeout(t *testing.T) {
	r := newEnv(t).run(nil, "serve", "--idle-timeout", "-5m", "--store", "mem:")
	if r.code != exitUsage || !strings.Contains(r.stderr, "--idle-timeout -5m0s is negative") {
		t.Fatalf("exit %d, stderr %q: want a usage error naming --idle-timeout", r.code, r.stderr)
	}
}

func TestServeHelpShowsCurlSession(t *testing.T) {
	r := newEnv(t).run(nil, "serve", "--help")
	for _, want := range []string{"curl", "/v1/sessions", "/turns", "/events", "/approvals/", "Last-Event-ID"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("rein serve --help lacks %q", want)
		}
	}
}

// TestServeEndToEnd runs the binary against the fake provider: create a
// session, prompt, stream, approve the write, export; then Ctrl-C.
func TestServeEndToEnd(t *testing.T) {
	e := newEnv(t)
	m := llmtest.NewModel(
		llmtest.CallTool("w1", "write", `{"path":"hello.txt","content":"hi\n"}`),
		llmtest.Reply("Wrote hello.txt."),
	)
	srv := llmtest.NewServer(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const token = "serve-test-token"
	cmd := e.cmd(ctx, []string{"ANTHROPIC_API_KEY=sk-test-secret-key", "REIN_SERVE_TOKEN=" + token},
		"serve", "--addr", "127.0.0.1:0", "--model", "anthropic/claude-sonnet-4-5", "--base-url", srv.URL, "--store", e.store, "--cwd", e.work)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stderr)
	var base string
	for base == "" && lines.Scan() {
		if _, rest, ok := strings.Cut(lines.Text(), "listening on "); ok {
			base, _, _ = strings.Cut(rest, " ")
		}
	}
	if base == "" {
		t.Fatal("rein serve never said where it listens")
	}
	var logged strings.Builder
	go io.Copy(&logged, stderr)

	call := func(method, path, body string, out any) int {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if out != nil {
			if err := json.Unmarshal(b, out); err != nil {
				t.Fatalf("%s %s: %s: %v", method, path, b, err)
			}
		}
		return resp.StatusCode
	}
	var bad struct {
		Error struct{ Code, Message string }
	}
	if st := call("POST", "/v1/sessions", `{"tools":["nope"]}`, &bad); st != 400 || strings.Contains(bad.Error.Message, "--tools") || !strings.Contains(bad.Error.Message, `"tools"`) {
		t.Errorf("unknown tool: %d %+v, want 400 in the API's words", st, bad.Error)
	}
	var created struct{ ID string }
	if st := call("POST", "/v1/sessions", `{"tools":["read","write"]}`, &created); st != http.StatusCreated {
		t.Fatalf("create: %d", st)
	}
	if st := call("POST", "/v1/sessions/"+created.ID+"/turns", `{"prompt":"write hello.txt"}`, nil); st != http.StatusAccepted {
		t.Fatalf("turn: %d", st)
	}
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/v1/sessions/"+created.ID+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sse := bufio.NewScanner(resp.Body)
	waitFor := func(typ string) json.RawMessage {
		t.Helper()
		for sse.Scan() {
			data, ok := strings.CutPrefix(sse.Text(), "data: ")
			if !ok {
				continue
			}
			var ev struct {
				Type string
				Data json.RawMessage
			}
			if json.Unmarshal([]byte(data), &ev) == nil && ev.Type == typ {
				return ev.Data
			}
		}
		t.Fatalf("the stream ended before a %s event", typ)
		return nil
	}
	var waiting struct {
		CallID string `json:"call_id"`
	}
	json.Unmarshal(waitFor("approval.request"), &waiting)
	if st := call("POST", "/v1/sessions/"+created.ID+"/approvals/"+waiting.CallID, `{"decision":"allow"}`, nil); st != http.StatusOK {
		t.Fatalf("approve %q: %d", waiting.CallID, st)
	}
	waitFor("turn.end")
	if b, err := os.ReadFile(filepath.Join(e.work, "hello.txt")); err != nil || string(b) != "hi\n" {
		t.Errorf("hello.txt: %q, %v", b, err)
	}
	req, _ = http.NewRequestWithContext(ctx, "GET", base+"/v1/sessions/"+created.ID+"/export?format=markdown", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	exp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	md, _ := io.ReadAll(exp.Body)
	exp.Body.Close()
	if !strings.Contains(string(md), "## User\n\nwrite hello.txt") || !strings.Contains(string(md), "Wrote hello.txt.") {
		t.Errorf("markdown export:\n%s", md)
	}
	resp.Body.Close()
	cmd.Process.Signal(syscall.SIGINT)
	if err := cmd.Wait(); err != nil {
		t.Errorf("rein serve after Ctrl-C: %v\n%s", err, logged.String())
	}
	if strings.Contains(logged.String()+string(md), "sk-test-secret-key") || strings.Contains(logged.String(), token) {
		t.Error("a secret reached the output")
	}
}
