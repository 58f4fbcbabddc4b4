package main

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
)

func TestSessionsCommands(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	m := llmtest.NewModel(llmtest.Reply("First answer."), llmtest.Reply("Answer in the fork."))
	srv := llmtest.NewServer(t, m)
	if r := e.run(w.env(), w.args(srv, e, "--new-session", "s1", "first question")...); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	st := []string{"--store", e.store}
	sessions := func(args ...string) result {
		t.Helper()
		r := e.run(nil, append(append([]string{"sessions"}, args...), st...)...)
		if r.code != 0 {
			t.Fatalf("sessions %v: exit %d\n%s", args, r.code, r.stderr)
		}
		return r
	}

	if r := sessions("list"); !regexp.MustCompile(`\ns1 +just now +1 +\$[0-9.]+ +first question\n`).MatchString(r.stdout) {
		t.Errorf("list does not show s1, one turn, its cost and title:\n%s", r.stdout)
	}
	if r := sessions("list", "--all"); !strings.Contains(r.stdout, "s1") || !strings.Contains(r.stdout, e.work) {
		t.Errorf("list --all does not show s1 in %s:\n%s", e.work, r.stdout)
	}
	if r := sessions("show", "s1"); !strings.Contains(r.stdout, "first question") || !strings.Contains(r.stdout, "First answer.") || !strings.Contains(r.stdout, "\n1 turn;") {
		t.Errorf("show:\n%s", r.stdout)
	}
	r := sessions("export", "s1")
	events, err := readNDJSON(strings.NewReader(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	if err := session.Balanced(events); err != nil {
		t.Errorf("exported log is not balanced: %v", err)
	}
	if events[0].Session != "s1" || events[len(events)-1].Data.EventType() != session.TypeTurnEnd {
		t.Errorf("export: first %+v, last %s", events[0], events[len(events)-1].Data.EventType())
	}
	if r := sessions("export", "--format", "markdown", "s1"); !strings.Contains(r.stdout, "## User\n\nfirst question") || !strings.Contains(r.stdout, "## Assistant\n\nFirst answer.") {
		t.Errorf("markdown export:\n%s", r.stdout)
	}
	if r := sessions("tail", "s1"); !strings.Contains(r.stdout, "turn.start") || !strings.Contains(r.stdout, "turn.end") {
		t.Errorf("tail:\n%s", r.stdout)
	}

	// Fork after the first user message and continue the fork.
	fork := strings.TrimSpace(sessions("fork", "s1@2").stdout)
	if fork == "" || fork == "s1" {
		t.Fatalf("fork printed %q", fork)
	}
	if r := e.run(w.env(), w.args(srv, e, "--session", fork, "second question")...); r.code != 0 {
		t.Fatalf("run on fork: exit %d\n%s", r.code, r.stderr)
	}
	got := strings.Join(transcript(m.Requests()[1]), "\n")
	if !strings.Contains(got, "first question") || !strings.HasSuffix(got, "second question") || strings.Contains(got, "First answer.") {
		t.Errorf("fork's request = %q; want the first question without its answer, then the second", got)
	}

	sessions("rm", "s1")
	r = e.run(nil, append([]string{"sessions", "show", "s1"}, st...)...)
	if r.code != 2 || !strings.Contains(r.stderr, "rein sessions list") {
		t.Errorf("show after rm: exit %d\n%s", r.code, r.stderr)
	}
}

func TestStoreKinds(t *testing.T) {
	for _, spec := range []string{"jsonl:DIR", "sqlite:DIR/x.db"} {
		t.Run(spec[:strings.Index(spec, ":")], func(t *testing.T) {
			e := newEnv(t)
			w := wires[1]
			m := llmtest.NewModel(llmtest.Reply("ok"))
			srv := llmtest.NewServer(t, m)
			e.store = strings.ReplaceAll(spec, "DIR", filepath.Join(e.home, "st"))
			if r := e.run(w.env(), w.args(srv, e, "--new-session", "k1", "hi")...); r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			r := e.run(nil, "sessions", "list", "--store", e.store)
			if !strings.Contains(r.stdout, "k1") {
				t.Errorf("list:\n%s%s", r.stdout, r.stderr)
			}
		})
	}
	// The default store lives under $XDG_STATE_HOME/rein.
	e := newEnv(t)
	m := llmtest.NewModel(llmtest.Reply("ok"))
	srv := llmtest.NewServer(t, m)
	r := e.run(wires[0].env(), "run", "--model", wires[0].model, "--base-url", srv.URL, "hi")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(e.home, "state", "rein", "sessions.db")); err != nil {
		t.Errorf("default store: %v", err)
	}
}

func TestSessionsTailFollow(t *testing.T) { checkTailFollow(t, newEnv(t)) }

// checkTailFollow runs a turn of session "tf" in e's store ("one",
// answered "first"), then follows it with 'sessions tail -f' while a
// second turn ("two", answered "second") runs in another process.
func checkTailFollow(t *testing.T, e *env) {
	t.Helper()
	w := wires[0]
	m := llmtest.NewModel(llmtest.Reply("first"), llmtest.Reply("second"))
	srv := llmtest.NewServer(t, m)
	if r := e.run(w.env(), w.args(srv, e, "--new-session", "tf", "one")...); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	cmd := e.cmd(t.Context(), nil, "sessions", "tail", "-f", "--json", "--store", e.store, "tf")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	lines := make(chan session.Event, 1024)
	go readNDJSONStream(out, lines)
	ends := 0
	deadline := time.After(20 * time.Second)
	ran := false
	for ends < 2 {
		select {
		case ev := <-lines:
			if ev.Data.EventType() == session.TypeTurnEnd {
				ends++
				if !ran {
					ran = true
					// A second turn, written while tail -f watches.
					if r := e.run(w.env(), w.args(srv, e, "--session", "tf", "two")...); r.code != 0 {
						t.Fatalf("exit %d\n%s", r.code, r.stderr)
					}
				}
			}
		case <-deadline:
			t.Fatalf("tail -f saw %d turn ends, want 2", ends)
		}
	}
}

// readNDJSONStream decodes events from r as they arrive.
func readNDJSONStream(r io.Reader, ch chan<- session.Event) (int, error) {
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		ev, err := session.DecodeEvent(sc.Bytes())
		if err != nil {
			return n, err
		}
		ch <- ev
		n++
	}
	return n, sc.Err()
}
