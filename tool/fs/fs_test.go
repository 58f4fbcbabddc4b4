package fs

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/reinhq/rein/internal/golden"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/sandbox"
)

const mainGo = `package main

import "fmt"

// greet says hello.
func greet(name string) string {
	return "Hello, " + name
}

func main() {
	fmt.Println(greet("world"))
}
`

// workspace writes the fixture tree and returns its root.
func workspace(t *testing.T) string {
	t.Helper()
	ws := filepath.Join(t.TempDir(), "ws")
	var big strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&big, "line %d\n", i)
	}
	files := map[string]string{
		"main.go":           mainGo,
		"README.md":         "# Demo\n\nA tiny demo. TODO: more.\n",
		"big.txt":           big.String(),
		"long.txt":          strings.Repeat("abcdefghij", 30) + "\nshort\n",
		"bin.dat":           "\x00\x01\x02binary\x00",
		"img.png":           "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00",
		"fake.png":          "not really a png\n",
		"doc.pdf":           "%PDF-1.4\n%\xe2\xe3\n1 0 obj\n<<>>\nendobj\n",
		".env":              "API_KEY=sk-secret\n",
		"empty.txt":         "",
		"dup.txt":           "foo\nbar\nfoo\n",
		".gitignore":        "build/\n*.log\n!keep.log\n",
		"build/out.go":      "package build // TODO ignored\n",
		"x.log":             "TODO ignored log\n",
		"keep.log":          "TODO kept log\n",
		"sub/.gitignore":    "b.ts\n",
		"sub/notes.md":      "notes\nTODO: write notes\n",
		"sub/dir/a.go":      "package dir\n\n// TODO: fill in\nfunc A() {}\n",
		"sub/dir/b.ts":      "// TODO ignored by sub/.gitignore\n",
		"sub/dir/c.py":      "# todo lower case\nprint('x')\n",
		".git/config":       "TODO in git dir\n",
		"node/TODO-list.md": "TODO: path with dash-1-\n",
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, name := range names {
		p := filepath.Join(ws, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(files[name]), 0o644); err != nil {
			t.Fatal(err)
		}
		mt := base.Add(time.Duration(i) * time.Minute)
		os.Chtimes(p, mt, mt)
	}
	return ws
}

func testOptions() *Options {
	return &Options{DefaultLines: 20, MaxReadBytes: 4096, MaxLineLength: 100, MaxEntries: 50, MaxMatches: 50}
}

type step struct {
	tool string
	args string
	// before runs before the call, for changes made behind the tools' back.
	before func(t *testing.T, ws string)
	// session overrides the default session id.
	session string
}

func modify(name, content string) func(t *testing.T, ws string) {
	return func(t *testing.T, ws string) {
		t.Helper()
		p := filepath.Join(ws, filepath.FromSlash(name))
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		future := time.Now().Add(time.Hour)
		os.Chtimes(p, future, future)
	}
}

func showFile(name string) step {
	return step{tool: "#show", args: name}
}

// render gives a result as the model would see it.
func render(r *tool.Result) string {
	var b strings.Builder
	if r.IsError {
		b.WriteString("[error] ")
	}
	for _, p := range r.Parts {
		switch p := p.(type) {
		case *llm.Text:
			b.WriteString(p.Text)
		case *llm.Image:
			fmt.Fprintf(&b, "\n[image %s, %d bytes]", p.MediaType, len(p.Data))
		case *llm.Document:
			fmt.Fprintf(&b, "\n[document %s %q, %d bytes]", p.MediaType, p.Title, len(p.Data))
		default:
			fmt.Fprintf(&b, "[%s]", p.PartType())
		}
	}
	return b.String()
}

func runSteps(t *testing.T, ws string, ts []tool.Tool, steps []step) string {
	t.Helper()
	byName := map[string]tool.Tool{}
	for _, tl := range ts {
		byName[tl.Spec().Name] = tl
	}
	var out strings.Builder
	for _, s := range steps {
		if s.before != nil {
			s.before(t, ws)
			out.WriteString("(file changed on disk)\n")
		}
		if s.tool == "#show" {
			data, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(s.args)))
			fmt.Fprintf(&out, "$ cat %s\n%s%v\n\n", s.args, data, errOrEmpty(err))
			continue
		}
		tl, ok := byName[s.tool]
		if !ok {
			t.Fatalf("no tool %q", s.tool)
		}
		session := s.session
		if session == "" {
			session = "s1"
		}
		res, err := tl.Call(context.Background(), &tool.Call{ID: "c1", Name: s.tool, Args: json.RawMessage(s.args), Session: session, Progress: func(tool.Progress) {}})
		if err != nil {
			t.Fatalf("%s %s: Call returned error %v; model-facing failures must be results", s.tool, s.args, err)
		}
		fmt.Fprintf(&out, "> %s %s\n%s\n\n", s.tool, s.args, render(res))
	}
	return strings.ReplaceAll(out.String(), ws, "$ROOT")
}

func errOrEmpty(err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return ""
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", "golden", name+".txt"), []byte(got))
}

func TestTools(t *testing.T) {
	tests := []struct {
		name  string
		opts  func(*Options)
		steps []step
	}{
		{"read", nil, []step{{tool: "read", args: `{"path":"main.go"}`}}},
		{"read_range", nil, []step{{tool: "read", args: `{"path":"big.txt","offset":10,"limit":5}`}}},
		{"read_default_limit", nil, []step{{tool: "read", args: `{"path":"sub/../big.txt","offset":2990}`}, {tool: "read", args: `{"path":"dup.txt","limit":2}`}}},
		{"read_too_big", nil, []step{{tool: "read", args: `{"path":"big.txt"}`}}},
		{"read_long_line", nil, []step{{tool: "read", args: `{"path":"long.txt"}`}}},
		{"read_errors", nil, []step{
			{tool: "read", args: `{"path":"bin.dat"}`},
			{tool: "read", args: `{"path":"fake.png"}`},
			{tool: "read", args: `{"path":"missing.go"}`},
			{tool: "read", args: `{"path":"sub"}`},
			{tool: "read", args: `{"path":"../outside.txt"}`},
			{tool: "read", args: `{"path":"/etc/passwd"}`},
			{tool: "read", args: `{"path":".env"}`},
			{tool: "read", args: `{"path":"main.go","offset":500}`},
			{tool: "read", args: `{"path":""}`},
			{tool: "read", args: `{"path":5}`},
		}},
		{"read_empty_and_image", nil, []step{{tool: "read", args: `{"path":"empty.txt"}`}, {tool: "read", args: `{"path":"img.png"}`}, {tool: "read", args: `{"path":"doc.pdf"}`}}},
		{"read_secret_approved", func(o *Options) {
			o.ApproveSecret = func(_ context.Context, path string) bool { return path == ".env" }
		}, []step{{tool: "read", args: `{"path":".env"}`}}},
		{"B55_read_unchanged", nil, []step{
			{tool: "read", args: `{"path":"main.go"}`},
			{tool: "read", args: `{"path":"main.go"}`},
			{tool: "read", args: `{"path":"main.go","offset":5,"limit":3}`},
			{tool: "read", args: `{"path":"main.go"}`, session: "other"},
			{tool: "read", args: `{"path":"main.go"}`, before: modify("main.go", "package main\n")},
		}},
		{"write", nil, []step{
			{tool: "write", args: `{"path":"new/dir/f.txt","content":"one\ntwo\n"}`},
			showFile("new/dir/f.txt"),
			{tool: "write", args: `{"path":"new/dir/f.txt","content":"again\n"}`},
			{tool: "write", args: `{"path":"dup.txt","content":"x"}`},
			{tool: "read", args: `{"path":"dup.txt"}`},
			{tool: "write", args: `{"path":"dup.txt","content":"x"}`},
			showFile("dup.txt"),
			{tool: "write", args: `{"path":"../escape.txt","content":"x"}`},
			{tool: "write", args: `{"path":"sub","content":"x"}`},
		}},
		{"edit", nil, []step{
			{tool: "edit", args: `{"path":"main.go","old_string":"Hello","new_string":"Hi"}`},
			{tool: "read", args: `{"path":"main.go","limit":1}`},
			{tool: "edit", args: `{"path":"main.go","old_string":"\"Hello, \"","new_string":"\"Hi, \""}`},
			{tool: "edit", args: `{"path":"main.go","old_string":"func greet(name string) string {","new_string":"func greet(who string) string {"}`},
			{tool: "read", args: `{"path":"main.go"}`},
		}},
		{"B54_edit_changed_on_disk", nil, []step{
			{tool: "read", args: `{"path":"dup.txt"}`},
			{tool: "edit", args: `{"path":"dup.txt","old_string":"bar","new_string":"baz"}`, before: modify("dup.txt", "foo\nbar\nqux\n")},
			{tool: "read", args: `{"path":"dup.txt"}`},
			{tool: "edit", args: `{"path":"dup.txt","old_string":"bar","new_string":"baz"}`},
			showFile("dup.txt"),
		}},
		{"edit_errors", nil, []step{
			{tool: "read", args: `{"path":"dup.txt"}`},
			{tool: "edit", args: `{"path":"dup.txt","old_string":"foo","new_string":"x"}`},
			{tool: "edit", args: `{"path":"dup.txt","old_string":"baar","new_string":"x"}`},
			{tool: "edit", args: `{"path":"dup.txt","old_string":"zzzzzzzzzzzz","new_string":"x"}`},
			{tool: "edit", args: `{"path":"dup.txt","old_string":"bar","new_string":"bar"}`},
			{tool: "edit", args: `{"path":"dup.txt","old_string":"","new_string":"x"}`},
			{tool: "edit", args: `{"path":"missing.txt","old_string":"a","new_string":"b"}`},
			{tool: "edit", args: `{"path":"../x","old_string":"a","new_string":"b"}`},
			{tool: "edit", args: `{"path":"dup.txt","old_string":"foo","new_string":"x","replace_all":true}`},
			showFile("dup.txt"),
		}},
		{"multi_edit", nil, []step{
			{tool: "read", args: `{"path":"main.go"}`},
			{tool: "multi_edit", args: `{"path":"main.go","edits":[{"old_string":"greet","new_string":"welcome","replace_all":true},{"old_string":"says hello","new_string":"welcomes"}]}`},
			{tool: "multi_edit", args: `{"path":"main.go","edits":[{"old_string":"world","new_string":"there"},{"old_string":"greet","new_string":"x"}]}`},
			showFile("main.go"),
			{tool: "multi_edit", args: `{"path":"main.go","edits":[]}`},
		}},
		{"ls", nil, []step{
			{tool: "ls", args: `{}`},
			{tool: "ls", args: `{"path":"sub/dir"}`},
			{tool: "ls", args: `{"path":"main.go"}`},
			{tool: "ls", args: `{"path":"nope"}`},
			{tool: "ls", args: `{"path":".."}`},
		}},
		{"glob", nil, []step{
			{tool: "glob", args: `{"pattern":"**/*.go","sort":"name"}`},
			{tool: "glob", args: `{"pattern":"**/*.go"}`},
			{tool: "glob", args: `{"pattern":"*.md"}`},
			{tool: "glob", args: `{"pattern":"dir/*","path":"sub"}`},
			{tool: "glob", args: `{"pattern":"**/*.rs"}`},
			{tool: "glob", args: `{"pattern":"../*"}`},
			{tool: "glob", args: `{"pattern":"sub/**/../../../*"}`},
			{tool: "glob", args: `{"pattern":"/etc/*"}`},
			{tool: "glob", args: `{"pattern":"*","path":"../"}`},
			{tool: "glob", args: `{"pattern":"*","sort":"size"}`},
		}},
		{"grep", nil, []step{
			{tool: "grep", args: `{"pattern":"TODO"}`},
			{tool: "grep", args: `{"pattern":"TODO","output":"content"}`},
			{tool: "grep", args: `{"pattern":"todo","-i":true,"output":"count"}`},
			{tool: "grep", args: `{"pattern":"greet","output":"content","-C":1}`},
			{tool: "grep", args: `{"pattern":"^func","type":"go","output":"content"}`},
			{tool: "grep", args: `{"pattern":"TODO","glob":"*.md"}`},
			{tool: "grep", args: `{"pattern":"TODO","path":"sub"}`},
			{tool: "grep", args: `{"pattern":"line [0-9]+0$","path":"big.txt","output":"content","limit":3}`},
			{tool: "grep", args: `{"pattern":"API_KEY"}`},
			{tool: "grep", args: `{"pattern":"nothing-here"}`},
		}},
		{"grep_errors", nil, []step{
			{tool: "grep", args: `{"pattern":"(unclosed"}`},
			{tool: "grep", args: `{"pattern":"x","type":"cobol"}`},
			{tool: "grep", args: `{"pattern":"x","path":"../"}`},
			{tool: "grep", args: `{"pattern":"x","path":"/etc"}`},
			{tool: "grep", args: `{"pattern":"x","glob":"../*"}`},
			{tool: "grep", args: `{"pattern":"x","output":"lines"}`},
			{tool: "grep", args: `{"pattern":""}`},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := workspace(t)
			opts := testOptions()
			if tt.opts != nil {
				tt.opts(opts)
			}
			ts := NewTools(&sandbox.Policy{Root: ws}, opts)
			checkGolden(t, tt.name, runSteps(t, ws, ts, tt.steps))
		})
	}
}

func TestAnnotations(t *testing.T) {
	got := map[string]tool.Annotations{}
	for _, tl := range NewTools(&sandbox.Policy{Root: t.TempDir()}, nil) {
		s := tl.Spec()
		var v map[string]any
		if err := json.Unmarshal(s.Schema, &v); err != nil || v["type"] != "object" {
			t.Errorf("%s: schema is not a JSON object schema: %v", s.Name, err)
		}
		if s.Description == "" {
			t.Errorf("%s: no description", s.Name)
		}
		got[s.Name] = *s.Annotations
	}
	want := map[string]tool.Annotations{
		"read":       {ReadOnly: true, Idempotent: true},
		"ls":         {ReadOnly: true, Idempotent: true},
		"glob":       {ReadOnly: true, Idempotent: true},
		"grep":       {ReadOnly: true, Idempotent: true},
		"write":      {Destructive: true, Idempotent: true},
		"edit":       {Destructive: true},
		"multi_edit": {Destructive: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("annotations (-want +got):\n%s", diff)
	}
}

func TestIgnoreRules(t *testing.T) {
	root := parseIgnore(".", []byte("# comment\n*.log\n!keep.log\nbuild/\n/top.txt\ndocs/**/draft.md\n\\#hash\ntrailing   \n"))
	sub := parseIgnore("pkg", []byte("gen/\n!*.log\n"))
	stack := ignoreStack{root, sub}
	tests := []struct {
		rel  string
		dir  bool
		want bool
	}{
		{"a.log", false, true},
		{"x/y/a.log", false, true},
		{"keep.log", false, false},
		{"build", true, true},
		{"build", false, false},
		{"x/build", true, true},
		{"top.txt", false, true},
		{"x/top.txt", false, false},
		{"docs/draft.md", false, true},
		{"docs/a/b/draft.md", false, true},
		{"#hash", false, true},
		{"trailing", false, true},
		{"pkg/gen", true, true},
		{"pkg/a.log", false, false},
		{"main.go", false, false},
	}
	for _, tt := range tests {
		if got := stack.ignored(tt.rel, tt.dir); got != tt.want {
			t.Errorf("ignored(%q, dir=%v) = %v, want %v", tt.rel, tt.dir, got, tt.want)
		}
	}
}

// TestB53_ToolsStayInside runs path escapes through the tools themselves.
func TestB53_ToolsStayInside(t *testing.T) {
	ws := workspace(t)
	outside := filepath.Join(filepath.Dir(ws), "outside")
	os.MkdirAll(outside, 0o755)
	os.WriteFile(filepath.Join(outside, "secret.go"), []byte("package secret // TODO SECRET\n"), 0o644)
	os.Symlink(outside, filepath.Join(ws, "link"))
	os.Symlink(filepath.Join(outside, "secret.go"), filepath.Join(ws, "flink.go"))
	ts := NewTools(&sandbox.Policy{Root: ws}, nil)
	byName := map[string]tool.Tool{}
	for _, tl := range ts {
		byName[tl.Spec().Name] = tl
	}
	calls := []struct{ tool, args string }{
		{"read", `{"path":"link/secret.go"}`},
		{"read", `{"path":"flink.go"}`},
		{"ls", `{"path":"link"}`},
		{"glob", `{"pattern":"*.go","path":"link"}`},
		{"glob", `{"pattern":"link/*.go"}`},
		{"grep", `{"pattern":"SECRET","path":"link"}`},
		{"grep", `{"pattern":"SECRET","path":"flink.go"}`},
		{"grep", `{"pattern":"SECRET"}`},
		{"write", `{"path":"link/new.go","content":"x"}`},
		{"edit", `{"path":"flink.go","old_string":"TODO","new_string":"x"}`},
		{"glob", `{"pattern":"../outside/*"}`},
		{"glob", `{"pattern":"sub/../../outside/*"}`},
		{"glob", `{"pattern":"**/../../**"}`},
		{"glob", `{"pattern":"*","path":"../outside"}`},
		{"grep", `{"pattern":"SECRET","path":"../outside"}`},
		{"grep", `{"pattern":"SECRET","path":"../outside/secret.go"}`},
		{"grep", `{"pattern":"SECRET","glob":"../**"}`},
		{"grep", `{"pattern":"SECRET","path":"` + outside + `"}`},
		{"ls", `{"path":"../outside"}`},
		{"read", `{"path":"` + filepath.Join(outside, "secret.go") + `"}`},
		{"write", `{"path":"../outside/x.go","content":"x"}`},
		{"multi_edit", `{"path":"../outside/secret.go","edits":[{"old_string":"TODO","new_string":"x"}]}`},
	}
	refused := 0
	for _, c := range calls {
		res, err := byName[c.tool].Call(context.Background(), &tool.Call{Name: c.tool, Args: json.RawMessage(c.args), Session: "s"})
		if err != nil {
			t.Fatalf("%s %s: %v", c.tool, c.args, err)
		}
		text := render(res)
		if strings.Contains(text, "SECRET") && !strings.Contains(text, "No matches") {
			t.Errorf("%s %s leaked outside content: %s", c.tool, c.args, text)
		}
		switch {
		case strings.Contains(text, "SECRET") && !strings.Contains(text, "No matches"):
		case res.IsError || strings.HasPrefix(text, "No matches") || strings.HasPrefix(text, "No files match") ||
			(c.tool == "grep" || c.tool == "glob") && !strings.Contains(text, "secret.go"):
			refused++
		default:
			t.Errorf("%s %s succeeded: %s", c.tool, c.args, text)
		}
	}
	if refused != len(calls) {
		t.Errorf("refused %d of %d escapes through the tools", refused, len(calls))
	}
	t.Logf("refused %d/%d escapes through the tools", refused, len(calls))
	if data, _ := os.ReadFile(filepath.Join(outside, "secret.go")); string(data) != "package secret // TODO SECRET\n" {
		t.Errorf("outside file changed: %q", data)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.go")); err == nil {
		t.Errorf("a file was created outside")
	}
}

func TestReadStateForget(t *testing.T) {
	ws := workspace(t)
	st := NewReadState()
	ts := NewTools(&sandbox.Policy{Root: ws}, &Options{State: st})
	out := runSteps(t, ws, ts, []step{{tool: "read", args: `{"path":"dup.txt"}`}})
	st.Forget("s1")
	out2 := runSteps(t, ws, ts, []step{{tool: "read", args: `{"path":"dup.txt"}`}})
	if out != out2 {
		t.Errorf("after Forget the read returned %q, want the content again %q", out2, out)
	}
}

func FuzzIgnore(f *testing.F) {
	f.Add("*.log\n!keep.log\nbuild/\n/a/**/b\n", "a/x/b", true)
	f.Add("\\#x\n\\!y\n  \n", "#x", false)
	f.Fuzz(func(t *testing.T, rules, rel string, dir bool) {
		stack := ignoreStack{parseIgnore(".", []byte(rules))}
		_ = stack.ignored(rel, dir) // must not panic or hang
	})
}

func TestEditCRLF(t *testing.T) {
	ws := workspace(t)
	os.WriteFile(filepath.Join(ws, "win.txt"), []byte("one\r\ntwo\r\nthree\r\n"), 0o644)
	ts := NewTools(&sandbox.Policy{Root: ws}, nil)
	runSteps(t, ws, ts, []step{
		{tool: "read", args: `{"path":"win.txt"}`},
		{tool: "edit", args: `{"path":"win.txt","old_string":"one\ntwo","new_string":"1\n2"}`},
	})
	data, _ := os.ReadFile(filepath.Join(ws, "win.txt"))
	if string(data) != "1\r\n2\r\nthree\r\n" {
		t.Errorf("win.txt = %q, want CRLF kept", data)
	}
}

func TestWalkSkipsDeniedAndUnreadable(t *testing.T) {
	ws := workspace(t)
	os.MkdirAll(filepath.Join(ws, "private", "deep"), 0o755)
	os.WriteFile(filepath.Join(ws, "private", "deep", "x.md"), []byte("TODO private\n"), 0o644)
	os.MkdirAll(filepath.Join(ws, "locked"), 0o755)
	os.WriteFile(filepath.Join(ws, "locked", "y.md"), []byte("TODO locked\n"), 0o644)
	os.Chmod(filepath.Join(ws, "locked"), 0o000)
	defer os.Chmod(filepath.Join(ws, "locked"), 0o755)
	ts := NewTools(&sandbox.Policy{Root: ws, Deny: []string{"private"}}, testOptions())
	out := runSteps(t, ws, ts, []step{
		{tool: "grep", args: `{"pattern":"TODO","glob":"*.md"}`},
		{tool: "glob", args: `{"pattern":"**/*.md","sort":"name"}`},
	})
	if strings.Contains(out, "private") || strings.Contains(out, "[error]") || !strings.Contains(out, "sub/notes.md") {
		t.Errorf("walk did not skip the denied tree cleanly:\n%s", out)
	}
}
