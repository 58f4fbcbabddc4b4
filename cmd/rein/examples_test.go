package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
)

// examplesDir holds the recorded sessions shipped for newcomers.
const examplesDir = "../../examples/sessions"

// example is one shipped session: a prompt and the scripted model that
// answered it. go test ./cmd/rein -run TestExampleSessions -update records
// them again against the fake provider server.
type example struct {
	name   string
	prompt string
	script []llmtest.Entry
}

var examples = []example{
	{
		name:   "hello",
		prompt: "Create hello.txt with a friendly greeting, then show me what it says.",
		script: []llmtest.Entry{
			llmtest.CallTool("toolu_01", "write", `{"path":"hello.txt","content":"Hello from rein!\n"}`),
			llmtest.CallTool("toolu_02", "shell", `{"command":"cat hello.txt && wc -c hello.txt","description":"show the file and its size"}`),
			llmtest.Reply("I created `hello.txt`. It says:\n\n    Hello from rein!\n\nThat is 17 bytes, newline included."),
		},
	},
	{
		name:   "edit",
		prompt: "Write a short TODO list to notes.md, then mark the first item done.",
		script: []llmtest.Entry{
			llmtest.CallTool("toolu_01", "todo", `{"items":[{"id":"1","content":"Write notes.md","status":"in_progress"},{"id":"2","content":"Mark the first item done","status":"pending"}]}`),
			llmtest.CallTool("toolu_02", "write", `{"path":"notes.md","content":"# TODO\n\n- [ ] buy milk\n- [ ] call Ada\n"}`),
			llmtest.CallTool("toolu_03", "edit", `{"path":"notes.md","old_string":"- [ ] buy milk","new_string":"- [x] buy milk"}`),
			llmtest.CallTool("toolu_04", "read", `{"path":"notes.md"}`),
			llmtest.CallTool("toolu_05", "todo", `{"items":[{"id":"1","content":"Write notes.md","status":"completed"},{"id":"2","content":"Mark the first item done","status":"completed"}]}`),
			llmtest.Reply("Done: `notes.md` lists two items and \"buy milk\" is checked off."),
		},
	},
}

func TestExampleSessions(t *testing.T) {
	for _, ex := range examples {
		t.Run(ex.name, func(t *testing.T) {
			path := filepath.Join(examplesDir, ex.name+".ndjson")
			if *update {
				recordExample(t, ex, path)
			}
			e := newEnv(t)
			abs, err := filepath.Abs(path)
			if err != nil {
				t.Fatal(err)
			}
			r := e.run(nil, "replay", "--strict", abs)
			if r.code != 0 {
				t.Fatalf("replay %s: exit %d\nstdout:\n%s\nstderr:\n%s", path, r.code, r.stdout, r.stderr)
			}
			if !strings.Contains(r.stderr, "; 0 divergences") {
				t.Errorf("replay reported divergences:\n%s", r.stderr)
			}
			if !strings.Contains(r.stdout, finalText(t, ex)) {
				t.Errorf("stdout lacks the recorded answer:\n%s", r.stdout)
			}
		})
	}
}

// finalText is the text of the example's last scripted reply.
func finalText(t *testing.T, ex example) string {
	t.Helper()
	m := llmtest.NewModel(ex.script[len(ex.script)-1])
	msg, err := llm.Collect(m.Stream(t.Context(), &llm.Request{}))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, p := range msg.Message.Parts {
		if tx, ok := p.(*llm.Text); ok {
			b.WriteString(tx.Text)
		}
	}
	return b.String()
}

// recordExample runs rein against the fake server and writes the session.
func recordExample(t *testing.T, ex example, path string) {
	t.Helper()
	e := newEnv(t)
	m := llmtest.NewModel(ex.script...)
	srv := llmtest.NewServer(t, m)
	w := wires[0]
	args := w.args(srv, e, "--new-session", ex.name, "--approve", "auto", "--system", "You are rein, a careful software engineering agent.", ex.prompt)
	r := e.run(w.env(), args...)
	if r.code != 0 {
		t.Fatalf("record %s: exit %d\n%s", ex.name, r.code, r.stderr)
	}
	r = e.run(nil, "sessions", "export", "--store", e.store, ex.name)
	if r.code != 0 {
		t.Fatalf("export %s: exit %d\n%s", ex.name, r.code, r.stderr)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(r.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
}
