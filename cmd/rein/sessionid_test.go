package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm/llmtest"
)

func TestRunContinueLatest(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	m := llmtest.NewModel(llmtest.Reply("Old."), llmtest.Reply("Latest."), llmtest.Reply("Continued."))
	srv := llmtest.NewServer(t, m)
	for _, args := range [][]string{{"--new-session", "older", "first"}, {"--new-session", "newer", "second"}} {
		if r := e.run(w.env(), w.args(srv, e, args...)...); r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
	}
	r := e.run(w.env(), w.args(srv, e, "-c", "and then?")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "session newer") {
		t.Errorf("stderr does not name the continued session:\n%s", r.stderr)
	}
	want := []string{"user: second", "assistant: Latest.", "user: and then?"}
	if d := cmp.Diff(want, transcript(m.Requests()[2])); d != "" {
		t.Errorf("continued request (-want +got):\n%s", d)
	}
	r = e.run(w.env(), w.args(srv, e, "-c", "--session", "older", "x")...)
	if r.code != 2 || !strings.Contains(r.stderr, "--continue picks the session itself") {
		t.Errorf("-c with --session: exit %d\n%s", r.code, r.stderr)
	}
}

func TestRunContinueEmptyWorkspace(t *testing.T) {
	e := newEnv(t)
	r := e.run([]string{"REIN_MODEL=ollama/x"}, "run", "--store", e.store, "-c", "hi")
	if r.code != 2 || !strings.Contains(r.stderr, "no session in this workspace") {
		t.Errorf("exit %d\n%s", r.code, r.stderr)
	}
}

func TestRunUnknownSessionRefused(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	m := llmtest.NewModel(llmtest.Reply("one"), llmtest.Reply("two"))
	srv := llmtest.NewServer(t, m)
	if r := e.run(w.env(), w.args(srv, e, "--new-session", "feature-login", "first")...); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	r := e.run(w.env(), w.args(srv, e, "--session", "feature-logn", "second")...)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\n%s", r.code, r.stderr)
	}
	for _, s := range []string{"feature-logn not found", "closest: feature-login", "rein sessions list"} {
		if !strings.Contains(r.stderr, s) {
			t.Errorf("stderr does not say %q:\n%s", s, r.stderr)
		}
	}
	if n := len(m.Requests()); n != 1 {
		t.Errorf("%d requests, want 1: the refused run reached the model", n)
	}
	r = e.run(nil, "sessions", "list", "--store", e.store)
	if strings.Contains(r.stdout, "feature-logn") {
		t.Errorf("the refused id became a session:\n%s", r.stdout)
	}
	r = e.run(w.env(), w.args(srv, e, "--new-session", "feature-login", "again")...)
	if r.code != 2 || !strings.Contains(r.stderr, "--session feature-login") {
		t.Errorf("--new-session of an existing id: exit %d\n%s", r.code, r.stderr)
	}
}

func TestSessionIDPrefixes(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	m := llmtest.NewModel(llmtest.Reply("A."), llmtest.Reply("B."), llmtest.Reply("C."), llmtest.Reply("D."))
	srv := llmtest.NewServer(t, m)
	for _, id := range []string{"alpha-1", "alpha-2", "beta-7"} {
		if r := e.run(w.env(), w.args(srv, e, "--new-session", id, "hi "+id)...); r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
	}
	r := e.run(w.env(), w.args(srv, e, "--session", "bet", "more")...)
	if r.code != 0 || !strings.Contains(r.stderr, "session beta-7") {
		t.Errorf("--session by a unique prefix: exit %d\n%s", r.code, r.stderr)
	}
	if d := cmp.Diff([]string{"user: hi beta-7", "assistant: C.", "user: more"}, transcript(m.Requests()[3])); d != "" {
		t.Errorf("request after --session bet (-want +got):\n%s", d)
	}
	r = e.run(w.env(), w.args(srv, e, "--session", "alph", "more")...)
	if r.code != 2 || !strings.Contains(r.stderr, "ambiguous") || !strings.Contains(r.stderr, "alpha-1, alpha-2") {
		t.Errorf("ambiguous prefix: exit %d\n%s", r.code, r.stderr)
	}
	r = e.run(nil, "sessions", "show", "--store", e.store, "alpha-1")
	if r.code != 0 || !strings.Contains(r.stdout, "session alpha-1") {
		t.Errorf("show by id: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = e.run(nil, "sessions", "export", "--store", e.store, "--format", "markdown", "alpha-")
	if r.code != 2 || !strings.Contains(r.stderr, "ambiguous") {
		t.Errorf("export by an ambiguous prefix: exit %d\n%s", r.code, r.stderr)
	}
	if r := e.run(nil, "sessions", "rm", "--store", e.store, "alpha-1"); r.code != 0 {
		t.Fatalf("rm: exit %d\n%s", r.code, r.stderr)
	}
	r = e.run(nil, "sessions", "export", "--store", e.store, "--format", "markdown", "alpha")
	if r.code != 0 || !strings.Contains(r.stdout, "# Session alpha-2") {
		t.Errorf("export by a prefix now unique: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = e.run(nil, "sessions", "rm", "--store", e.store, "alp")
	if r.code != 0 || !strings.Contains(r.stderr, "deleted alpha-2") {
		t.Errorf("rm by prefix: exit %d\n%s", r.code, r.stderr)
	}
}
