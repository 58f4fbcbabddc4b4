package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm/llmtest"
)

// runStdin runs rein to completion with stdin as its standard input.
func (e *env) runStdin(stdin io.Reader, extraEnv []string, args ...string) result {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := e.cmd(ctx, extraEnv, args...)
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := result{stdout: out.String(), stderr: errb.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		e.t.Fatalf("rein %v: %v", args, err)
	}
	return r
}

func TestRunPipedStdinReachesTheRequest(t *testing.T) {
	diff := "--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-old\n+new\n"
	want := "review this diff\n\n<stdin>\n" + strings.TrimRight(diff, "\n") + "\n</stdin>"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "dash after the prompt", args: []string{"--tools", "none", "review this diff", "-"}, want: want},
		{name: "piped without a dash", args: []string{"review this diff"}, want: want},
		{name: "dash alone is the prompt", args: []string{"-"}, want: diff},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			w := wires[0]
			m := llmtest.NewModel(llmtest.Reply("Looks fine."))
			srv := llmtest.NewServer(t, m)
			r := e.runStdin(strings.NewReader(diff), w.env(), w.args(srv, e, tt.args...)...)
			if r.code != 0 {
				t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
			}
			reqs := m.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d requests, want 1", len(reqs))
			}
			if d := cmp.Diff(tt.want, lastUserText(reqs[0])); d != "" {
				t.Errorf("prompt sent (-want +got):\n%s", d)
			}
		})
	}
}

func TestRunPipeUsageErrors(t *testing.T) {
	e := newEnv(t)
	for _, args := range [][]string{
		{"run", "a", "b"},
		{"run", "a", "-", "c"},
	} {
		r := e.run(nil, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "PROMPT -") {
			t.Errorf("rein %v: exit %d, stderr:\n%s", args, r.code, r.stderr)
		}
	}
	// A prompt of only whitespace with input piped says what is missing.
	r := e.runStdin(strings.NewReader("data"), []string{"REIN_MODEL=ollama/x", "REIN_STORE=mem:"}, "run", " ", "-")
	if r.code != 2 || !strings.Contains(r.stderr, "prompt is empty") {
		t.Errorf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
}
