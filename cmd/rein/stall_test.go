package main

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
)

func TestRunStalledStreamIsRetried(t *testing.T) {
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			e := newEnv(t)
			m := llmtest.NewModel(
				llmtest.HangAfter(&llm.BlockStart{Index: 0, Kind: llm.BlockText}, &llm.TextDelta{Index: 0, Text: "PARTIAL-ONE-"}),
				llmtest.Reply("Second attempt."),
			)
			srv := llmtest.NewServer(t, m)
			start := time.Now()
			r := e.run(w.env(), w.args(srv, e, "--stall-timeout", "1s", "hello")...)
			took := time.Since(start)
			if r.code != 0 {
				t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
			}
			if took > 15*time.Second {
				t.Errorf("took %s with a 1s stall timeout", took)
			}
			if !strings.Contains(r.stderr, "retrying") || !strings.Contains(r.stderr, "timeout") {
				t.Errorf("stderr does not report the stall's retry:\n%s", r.stderr)
			}
			if n := len(m.Requests()); n != 2 {
				t.Errorf("%d requests, want 2", n)
			}
			// On a pipe the failed attempt's text is never written: the
			// answer is printed once, as the log records it, and a note
			// says a failed attempt's text was discarded.
			if !strings.Contains(r.stderr, "failed attempt's text was held back and discarded") {
				t.Errorf("stderr does not say the partial text was discarded:\n%s", r.stderr)
			}
			if r.stdout != "Second attempt.\n" {
				t.Errorf("stdout = %q, want only the retry's answer", r.stdout)
			}
		})
	}
}

func TestRunStallBeforeHeaders(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	m := llmtest.NewModel(llmtest.Reply("late").WithDelay(time.Minute), llmtest.Reply("On time."))
	srv := llmtest.NewServer(t, m)
	r := e.run(w.env(), w.args(srv, e, "--stall-timeout", "500ms", "hello")...)
	if r.code != 0 || r.stdout != "On time.\n" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}
}

func TestRunConnectionRefusedFailsFast(t *testing.T) {
	e := newEnv(t)
	// A port that was just free: nothing listens on it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	w := wires[0]
	start := time.Now()
	r := e.run(w.env(), "run", "--model", w.model, "--base-url", "http://"+addr, "--store", e.store, "--cwd", e.work, "hello")
	took := time.Since(start)
	if r.code != 1 || !strings.Contains(r.stderr, "connection refused") {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	if took > 3*time.Second {
		t.Errorf("a refused connection took %s to report", took)
	}
}
