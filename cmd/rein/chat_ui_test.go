package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/mcp/mcptest"
)

// An 80-line answer is scrolled back to its first line with PgUp, the
// mouse wheel and Shift+Up, and PgDn returns to its end.
func TestChatScrollsBackToTheFirstLine(t *testing.T) {
	e := newEnv(t)
	var answer strings.Builder
	for i := 1; i <= 80; i++ {
		fmt.Fprintf(&answer, "- answer line %02d\n", i)
	}
	_, srv := chatServer(t, llmtest.Reply(answer.String()))
	s := startChat(t, e, wires[0].env(), chatArgs(srv, e)...)
	s.waitFor("anthropic/claude-sonnet-4-5")
	s.prompt("count to eighty")
	scr := s.waitFor("• answer line 80", idlePrompt)
	if strings.Contains(scr, "answer line 01") {
		t.Fatalf("the first line shows before scrolling:\n%s", scr)
	}
	// Six pages are more than the answer: PgUp stops at its first line.
	s.keys("PgUp", "PgUp", "PgUp", "PgUp", "PgUp", "PgUp")
	scr = s.waitFor("you: count to eighty", "• answer line 01", "scrolled back")
	if strings.Contains(scr, "answer line 80") {
		t.Errorf("the last line still shows at the top of the transcript:\n%s", scr)
	}
	s.keys("PgDn", "PgDn", "PgDn", "PgDn", "PgDn", "PgDn")
	s.waitFor("• answer line 80", idlePrompt)
	// The mouse wheel (an SGR mouse report, as terminals send it) and
	// Shift+Up scroll line by line.
	for range 10 {
		s.typeText("\x1b[<64;10;5M")
	}
	scr = s.waitFor("• answer line 40", "scrolled back")
	if strings.Contains(scr, "answer line 80") || strings.Contains(scr, "answer line 01") {
		t.Errorf("ten turns of the wheel should scroll thirty lines:\n%s", scr)
	}
	s.keys("PgDn", "PgDn")
	s.waitFor("• answer line 80", idlePrompt)
	for range 3 {
		s.keys("S-Up")
	}
	s.waitFor("• answer line 77", "scrolled back")
}

// A pasted two-line text stays two lines, Alt+Enter adds a line, and the
// prompt reaches the model with its newlines.
func TestChatEditorKeepsLines(t *testing.T) {
	e := newEnv(t)
	m, srv := chatServer(t, llmtest.Reply("Got two lines."), llmtest.Reply("Got three."))
	s := startChat(t, e, wires[0].env(), chatArgs(srv, e)...)
	// An empty chat says how to use it.
	s.waitFor("anthropic/claude-sonnet-4-5", "Type a prompt and press Enter to send it. Alt+Enter or Ctrl+J adds a line")
	s.tmux("set-buffer", "-b", "clip", "first pasted line\nsecond pasted line")
	s.tmux("paste-buffer", "-p", "-b", "clip", "-t", "rein")
	s.waitFor("> first pasted line\n  second pasted line")
	s.keys("Enter")
	s.waitFor("Got two lines.", idlePrompt)
	s.typeText("one")
	s.keys("M-Enter")
	s.typeText("two")
	s.keys("C-j")
	s.typeText("three")
	s.waitFor("> one\n  two\n  three")
	s.keys("Enter")
	s.waitFor("Got three.", idlePrompt)
	reqs := m.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(reqs))
	}
	want := []string{"user: first pasted line\nsecond pasted line", "assistant: Got two lines.", "user: one\ntwo\nthree"}
	if diff := cmp.Diff(want, transcript(reqs[1])); diff != "" {
		t.Errorf("the second request (-want +got):\n%s", diff)
	}
}

// Up recalls the previous prompt, in the same chat and in the next one.
func TestChatUpRecallsThePreviousPrompt(t *testing.T) {
	e := newEnv(t)
	_, srv := chatServer(t, llmtest.Reply("First answer."), llmtest.Reply("Second answer."))
	s := startChat(t, e, wires[0].env(), chatArgs(srv, e)...)
	s.waitFor("anthropic/claude-sonnet-4-5")
	s.prompt("the first question")
	s.waitFor("First answer.", idlePrompt)
	s.keys("Up")
	s.waitFor("> the first question")
	s.keys("Down")
	s.waitScreen("returned to the empty draft", func(scr string) bool { return !strings.Contains(scr, "> the first question") })
	s.keys("C-c", "C-c")
	s.waitFor("[exit 0]")
	s.stop()

	// A new chat in another session recalls it from the user's history.
	s = startChat(t, e, wires[0].env(), "--model", wires[0].model, "--base-url", srv.URL, "--store", e.store, "--session", "chat2")
	s.waitFor("anthropic/claude-sonnet-4-5")
	s.keys("Up")
	s.waitFor("> the first question")
	if _, err := os.Stat(filepath.Join(e.home, "state", "rein", "chat_history.jsonl")); err != nil {
		t.Errorf("no history file under the state directory: %v", err)
	}
}

// A tool card shows the start of the tool's output, Ctrl+O all of it,
// and an edit's card the lines it changes.
func TestChatToolCardShowsOutput(t *testing.T) {
	e := newEnv(t)
	for _, name := range []string{"alpha.txt", "bravo.txt", "charlie.txt", "delta.txt", "echo.txt", "foxtrot.txt"} {
		if err := os.WriteFile(filepath.Join(e.work, name), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(e.work, "notes.md"), []byte("keep\nold words\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, srv := chatServer(t,
		llmtest.CallTool("c1", "ls", `{"path":"."}`),
		llmtest.CallTool("c2", "read", `{"path":"notes.md"}`),
		llmtest.CallTool("c3", "edit", `{"path":"notes.md","old_string":"old words","new_string":"new words"}`),
		llmtest.Reply("Listed and edited."),
	)
	s := startChat(t, e, wires[0].env(), chatArgs(srv, e, "--approve", "auto")...)
	s.waitFor("anthropic/claude-sonnet-4-5")
	s.prompt("look and edit")
	scr := s.waitFor("Listed and edited.", idlePrompt, "│ alpha.txt", "more lines (Ctrl+O shows all)", "│ - old words", "│ + new words")
	if strings.Contains(scr, "foxtrot.txt") {
		t.Errorf("the collapsed card shows all of the output:\n%s", scr)
	}
	s.keys("C-o")
	s.waitFor("│ foxtrot.txt", "│ - old words")
	b, err := os.ReadFile(filepath.Join(e.work, "notes.md"))
	if err != nil || string(b) != "keep\nnew words\n" {
		t.Errorf("notes.md = %q, %v", b, err)
	}
}

// Ctrl+C during a turn cancels it; on an idle prompt it asks, and a
// second press quits, printing the session and how to continue it.
func TestChatCtrlC(t *testing.T) {
	e := newEnv(t)
	_, srv := chatServer(t, llmtest.HangAfter(&llm.BlockStart{Index: 0, Kind: llm.BlockText}, &llm.TextDelta{Index: 0, Text: "Working on it"}))
	s := startChat(t, e, wires[0].env(), chatArgs(srv, e)...)
	s.waitFor("anthropic/claude-sonnet-4-5")
	s.prompt("a long job")
	s.waitFor("Working on it", "working (Esc cancels)")
	s.keys("C-c")
	s.waitFor("turn cancelled", idlePrompt)
	s.keys("C-c")
	s.waitFor("Quit rein chat? Press Ctrl+C again")
	// Any other key stays, and goes to the editor.
	s.typeText("z")
	scr := s.waitFor("> z")
	if strings.Contains(scr, "Quit rein chat?") {
		t.Errorf("the question stayed after another key:\n%s", scr)
	}
	s.keys("C-c") // clears the input
	s.keys("C-c")
	s.waitFor("Quit rein chat?")
	s.keys("C-c")
	s.waitFor("[exit 0]", "session chat1", "continue it with: rein chat --session chat1", "rein run -c", "Working on it")
}

// A subagent's calls show in the transcript, indented under its name.
func TestChatShowsSubagentProgress(t *testing.T) {
	e := newEnv(t)
	writeCounter(t, e)
	parent := []llmtest.Entry{
		llmtest.CallTool("call_1", "spawn_agent", `{"task":"count the files","agent":"counter"}`),
		llmtest.Reply("There are 3 files."),
	}
	step := 0
	route := llmtest.Respond(func(req *llm.Request) llmtest.Entry {
		for _, s := range req.System {
			if isChild(s.Text) {
				if len(req.Messages) == 1 {
					return llmtest.CallTool("kid_1", "ls", `{"path":"."}`)
				}
				return llmtest.Reply("3 files")
			}
		}
		step++
		return parent[min(step, len(parent))-1]
	})
	m := llmtest.NewModel(route, route, route, route)
	srv := llmtest.NewServerWithOptions(t, m, &llmtest.ServerOptions{NoCache: true})
	s := startChat(t, e, wires[0].env(), chatArgs(srv, e, "--tools", "ls,spawn_agent", "--approve", "auto")...)
	s.waitFor("anthropic/claude-sonnet-4-5")
	s.prompt("how many files?")
	s.waitFor("  [counter] → ls", "  [counter]   ls ok", "  [counter] ended completed", "There are 3 files.", idlePrompt)
}

// An MCP server's request for input is a form in the chat: its answers
// reach the server; Esc declines the next one, and n a request to open
// a page.
func TestChatAnswersAnElicitationForm(t *testing.T) {
	url := mcptest.ServeHTTP(t, mcptest.NewHostServer(nil))
	e := newEnv(t)
	m, srv := chatServer(t,
		llmtest.CallTool("c1", "mcp_host_form", `{}`),
		llmtest.CallTool("c2", "mcp_host_form", `{}`),
		llmtest.CallTool("c3", "mcp_host_url", `{}`),
		llmtest.Reply("Thanks, Ada."),
	)
	s := startChat(t, e, wires[0].env(), chatArgs(srv, e, "--approve", "auto", "--mcp", "host="+url)...)
	s.waitFor("anthropic/claude-sonnet-4-5")
	s.prompt("who am I?")
	s.waitFor("MCP server host asks: Who are you?", "age (integer)")
	s.prompt("36")
	s.waitFor("age: 36", "Your name (string, required)")
	s.keys("Enter") // a required field cannot be left empty
	s.waitFor("Your name is required")
	s.prompt("Ada")
	s.waitFor(`│ accept {"age":36,"name":"Ada"}`, "MCP server host asks: Who are you?")
	s.keys("Escape")
	s.waitFor("│ decline null", "MCP server host asks: Sign in", "Open https://example.com/signin?")
	s.typeText("n")
	s.waitFor("Thanks, Ada.", idlePrompt)
	reqs := m.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	var results []string
	for _, msg := range reqs[3].Messages {
		for _, p := range msg.Parts {
			if r, ok := p.(*llm.ToolResult); ok {
				results = append(results, resultText(r.Parts))
			}
		}
	}
	if diff := cmp.Diff([]string{`accept {"age":36,"name":"Ada"}`, "decline null", "decline null"}, results); diff != "" {
		t.Errorf("tool results the model got (-want +got):\n%s", diff)
	}
}

// Without a terminal chat reads prompts from stdin, one a line, and
// prints the answers and the session.
func TestChatWithoutTerminal(t *testing.T) {
	e := newEnv(t)
	m, srv := chatServer(t, llmtest.Reply("First reply."), llmtest.Reply("Second reply."))
	r := e.runStdin(strings.NewReader("hello\n\nand again\n"), wires[0].env(), append([]string{"chat"}, chatArgs(srv, e)...)...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if r.stdout != "First reply.\nSecond reply.\n" {
		t.Errorf("stdout = %q", r.stdout)
	}
	for _, want := range []string{"one prompt per line", "session chat1", "rein chat --session chat1"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if n := m.Calls(); n != 2 {
		t.Errorf("%d model calls, want 2", n)
	}
}

// /model keeps the chat's --base-url for the same provider, and refuses
// a provider the address was not given for, saying why.
func TestChatModelSwitchKeepsTheBaseURL(t *testing.T) {
	e := newEnv(t)
	m, srv := chatServer(t, llmtest.Reply("From the same server."))
	s := startChat(t, e, wires[0].env(), chatArgs(srv, e)...)
	s.waitFor("anthropic/claude-sonnet-4-5")
	s.prompt("/model anthropic/claude-haiku-4-5")
	s.waitFor("· model anthropic/claude-haiku-4-5")
	s.prompt("still there?")
	s.waitFor("From the same server.", idlePrompt)
	if reqs := m.Requests(); len(reqs) != 1 || reqs[0].Model != "claude-haiku-4-5" {
		t.Errorf("requests = %d, want one for claude-haiku-4-5 at the chat's --base-url", len(reqs))
	}
	s.prompt("/model openai/gpt-5")
	s.waitFor("not switching to openai/gpt-5: this chat was started with --base-url for anthropic")
}
