package main

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
)

func TestSessionsListTitleTurnsCostJSONLimit(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	other := filepath.Join(e.home, "other")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	m := llmtest.NewModel(llmtest.Reply("One."), llmtest.Reply("Two."), llmtest.Reply("Three."), llmtest.Reply("Four."))
	srv := llmtest.NewServer(t, m)
	for _, args := range [][]string{
		{"--new-session", "s-a", "fix the parser\nand its tests"},
		{"--session", "s-a", "and the docs"},
		{"--new-session", "s-b", "second session"},
	} {
		if r := e.run(w.env(), w.args(srv, e, args...)...); r.code != 0 {
			t.Fatalf("run %q: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	if r := e.run(w.env(), "run", "--model", w.model, "--base-url", srv.URL, "--store", e.store, "--cwd", other, "--new-session", "s-elsewhere", "hi"); r.code != 0 {
		t.Fatalf("run elsewhere: exit %d\n%s", r.code, r.stderr)
	}
	list := func(args ...string) result {
		t.Helper()
		r := e.run(nil, append([]string{"sessions", "list", "--store", e.store}, args...)...)
		if r.code != 0 {
			t.Fatalf("sessions list %q: exit %d\n%s", args, r.code, r.stderr)
		}
		return r
	}

	// The workspace's sessions, most recent first, as JSON.
	var got []listing
	for _, line := range strings.Split(strings.TrimSpace(list("--json").stdout), "\n") {
		var l listing
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if l.Cost <= 0 {
			t.Errorf("%s costs %v", l.Session, l.Cost)
		}
		got = append(got, listing{Session: l.Session, Title: l.Title, Turns: l.Turns, WorkDir: l.WorkDir})
	}
	want := []listing{
		{Session: "s-b", Title: "second session", Turns: 1, WorkDir: e.work},
		{Session: "s-a", Title: "fix the parser", Turns: 2, WorkDir: e.work},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("list --json (-want +got):\n%s", diff)
	}

	r := list("--limit", "1")
	if !strings.Contains(r.stdout, "s-b") || strings.Contains(r.stdout, "s-a") || !strings.Contains(r.stderr, "1 more session; --limit 0 shows all") {
		t.Errorf("list --limit 1:\n%s\n%s", r.stdout, r.stderr)
	}
	r = list("--all")
	if !strings.Contains(r.stdout, "s-elsewhere") || !strings.Contains(r.stdout, other) || !strings.Contains(r.stdout, "WORKDIR") {
		t.Errorf("list --all:\n%s", r.stdout)
	}
	if r := list("--cwd", other); !strings.Contains(r.stdout, "s-elsewhere") || strings.Contains(r.stdout, "s-a") {
		t.Errorf("list --cwd %s:\n%s", other, r.stdout)
	}
	if r := e.run(nil, "sessions", "list", "--store", e.store, "--limit", "-1"); r.code != 2 || !strings.Contains(r.stderr, "--limit -1") {
		t.Errorf("--limit -1: exit %d\n%s", r.code, r.stderr)
	}
}

// A run that never reaches the model leaves no session to list.
func TestFailedRunLeavesNoSession(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	srv := llmtest.NewServer(t, llmtest.NewModel(llmtest.Fail(&llm.ProviderError{Kind: llm.ErrAuth, StatusCode: 401, Message: "invalid x-api-key"})))
	for name, args := range map[string][]string{
		"401":     w.args(srv, e, "hello"),
		"refused": {"run", "--model", w.model, "--base-url", dead, "--store", e.store, "--cwd", e.work, "hello"},
		"named":   w.args(srv, e, "--new-session", "s-named", "hello"),
	} {
		r := e.run(w.env(), args...)
		if r.code == 0 || !strings.Contains(r.stderr, "no session kept") {
			t.Errorf("%s: exit %d\n%s", name, r.code, r.stderr)
		}
	}
	if r := e.run(nil, "run", "--store", e.store, "--cwd", e.work, "hello"); r.code != 2 {
		t.Errorf("no key: exit %d\n%s", r.code, r.stderr)
	}
	r := e.run(nil, "sessions", "list", "--all", "--json", "--store", e.store)
	if r.code != 0 || r.stdout != "" {
		t.Errorf("sessions left behind: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestSessionsRmUsage(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	srv := llmtest.NewServer(t, llmtest.NewModel(llmtest.Reply("Kept.")))
	if r := e.run(w.env(), w.args(srv, e, "--new-session", "s-keep", "hello")...); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	r := e.run(nil, "sessions", "rm", "--store", e.store)
	if r.code != 2 || !strings.Contains(r.stderr, "needs one or more session IDs; 'rein sessions list' shows them") {
		t.Errorf("rm with no id: exit %d\n%s", r.code, r.stderr)
	}
	// One unknown id: nothing is deleted.
	r = e.run(nil, "sessions", "rm", "--store", e.store, "s-keep", "s-nope")
	if r.code != 2 || !strings.Contains(r.stderr, "session s-nope not found") {
		t.Errorf("rm with an unknown id: exit %d\n%s", r.code, r.stderr)
	}
	if r := e.run(nil, "sessions", "show", "--store", e.store, "s-keep"); r.code != 0 {
		t.Errorf("s-keep was deleted with an unknown id beside it: exit %d\n%s", r.code, r.stderr)
	}
	if r := e.run(nil, "sessions", "rm", "--store", e.store, "s-k"); r.code != 0 || !strings.Contains(r.stderr, "deleted s-keep") {
		t.Errorf("rm by prefix: exit %d\n%s", r.code, r.stderr)
	}
}

// A session recorded without totals in its metadata is read once, and
// they are kept for the next listing.
func TestTotalsFromTheLog(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemStore()
	f, err := os.Open(filepath.Join("..", "..", "examples", "sessions", "hello.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	id, err := session.Import(ctx, st, f)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	title, turns, _, err := totals(ctx, st, info)
	if err != nil || title == "" || turns != 1 {
		t.Fatalf("totals = %q, %d, %v", title, turns, err)
	}
	info, err = st.Info(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if info.Meta[metaTitle] != title || info.Meta[metaTurns] != "1" || info.Meta[metaCost] == "" || info.Meta[metaSeq] != strconv.FormatInt(info.LastSeq, 10) {
		t.Errorf("metadata after the first read = %v", info.Meta)
	}

	// A turn appended by any host is counted at the next listing, from
	// the events after the counted ones.
	next := info.LastSeq
	more := []session.Event{
		{Seq: next + 1, Session: id, Turn: "t2", Run: "r2", Data: &session.TurnStart{Trigger: session.TriggerPrompt}},
		{Seq: next + 2, Session: id, Turn: "t2", Run: "r2", Data: &session.UserMessage{Parts: []llm.Part{&llm.Text{Text: "again"}}}},
		{Seq: next + 3, Session: id, Turn: "t2", Run: "r2", Data: &session.TurnEnd{Reason: session.EndCompleted}},
	}
	if err := st.Append(ctx, id, more...); err != nil {
		t.Fatal(err)
	}
	if info, err = st.Info(ctx, id); err != nil {
		t.Fatal(err)
	}
	title2, turns, _, err := totals(ctx, st, info)
	if err != nil || title2 != title || turns != 2 {
		t.Errorf("totals after another turn = %q, %d, %v; want %q, 2", title2, turns, err, title)
	}
}
