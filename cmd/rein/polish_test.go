package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/reinhq/rein/llm/llmtest"
)

func TestSystemPromptTellsTheEnvironment(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	if err := os.MkdirAll(filepath.Join(e.work, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.work, ".git", "HEAD"), []byte("ref: refs/heads/feature-x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := llmtest.NewModel(llmtest.Reply("ok"))
	srv := llmtest.NewServer(t, m)
	before := time.Now().Format("2006-01-02")
	if r := e.run(w.env(), w.args(srv, e, "hello")...); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	after := time.Now().Format("2006-01-02")
	var sys strings.Builder
	for _, s := range m.Requests()[0].System {
		sys.WriteString(s.Text)
	}
	got := sys.String()
	for _, want := range []string{
		"Working directory: " + e.work + "\n",
		"Platform: " + runtime.GOOS + "/" + runtime.GOARCH + "\n",
		"Git repository: yes, at " + e.work + ", branch feature-x\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the system prompt lacks %q:\n%s", want, got)
		}
	}
	if !strings.Contains(got, "Date: "+before) && !strings.Contains(got, "Date: "+after) {
		t.Errorf("the system prompt lacks today's date:\n%s", got)
	}
}

func TestGitStateOutsideARepository(t *testing.T) {
	dir := t.TempDir()
	if root, head := gitState(dir); root != "" || head != "" {
		t.Skipf("%s is inside a repository (%s); nothing to check", dir, root)
	}
	if s := environmentSection(dir, time.Now()); !strings.Contains(s, "Git repository: no\n") {
		t.Errorf("section:\n%s", s)
	}
	// A worktree: .git is a file naming the git directory.
	gd := filepath.Join(dir, "gitdir")
	os.MkdirAll(gd, 0o755)
	os.WriteFile(filepath.Join(gd, "HEAD"), []byte("0123456789abcdef0123456789abcdef01234567\n"), 0o644)
	wt := filepath.Join(dir, "wt")
	os.MkdirAll(filepath.Join(wt, "sub"), 0o755)
	os.WriteFile(filepath.Join(wt, ".git"), []byte("gitdir: ../gitdir\n"), 0o644)
	if root, head := gitState(filepath.Join(wt, "sub")); root != wt || head != "detached at 0123456789ab" {
		t.Errorf("gitState = %q, %q", root, head)
	}
}

func TestModelAliasesResolve(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	for _, spec := range []string{"sonnet", "claude-sonnet-4-5", "anthropic/sonnet", "claude-sonnet-4-5-20250929", "haiku"} {
		t.Run(spec, func(t *testing.T) {
			srv := llmtest.NewServer(t, llmtest.NewModel(llmtest.Reply("ok")))
			r := e.run(w.env(), "run", "--model", spec, "--base-url", srv.URL, "--store", "mem:", "--cwd", e.work, "hello")
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			var body struct {
				Model string `json:"model"`
			}
			if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"sonnet": "claude-sonnet-4-5", "anthropic/sonnet": "claude-sonnet-4-5", "haiku": "claude-haiku-4-5"}[spec]
			if want == "" {
				want = spec
			}
			if body.Model != want {
				t.Errorf("the request asked for %q, want %q", body.Model, want)
			}
		})
	}
	r := e.run(w.env(), "run", "--model", "sonet", "--store", "mem:", "hello")
	if r.code != 2 || !strings.Contains(r.stderr, "haiku, opus, sonnet") {
		t.Errorf("a mistyped alias: exit %d\n%s", r.code, r.stderr)
	}
}

func TestCompletionOfFlagValues(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", "--model", ""}, []string{"anthropic/claude-sonnet-4-5", "openai/gpt-5", "sonnet", "ollama/"}},
		{[]string{"chat", "--model", "son"}, []string{"sonnet"}},
		{[]string{"run", "--approve", ""}, []string{"auto", "ask", "deny"}},
		{[]string{"sessions", "list", "--store", ""}, []string{"sqlite:", "jsonl:", "postgres://", "mem:"}},
	} {
		r := e.run(nil, append([]string{"__complete"}, c.args...)...)
		lines := strings.Split(r.stdout, "\n")
		for _, want := range c.want {
			found := false
			for _, l := range lines {
				found = found || strings.SplitN(l, "\t", 2)[0] == want
			}
			if !found {
				t.Errorf("completing %q does not offer %q:\n%s", c.args, want, r.stdout)
			}
		}
	}
}

// After a run that spilled output into .rein/spill, git status stays clean.
func TestReinDirKeepsOutOfGitStatus(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (Debian: apt-get install git)")
	}
	e := newEnv(t)
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = e.work
		cmd.Env = append(e.vars, "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("init", "-q")
	m := llmtest.NewModel(llmtest.CallTool("c1", "shell", `{"command":"seq 1 20000"}`), llmtest.Reply("Counted."))
	srv := llmtest.NewServer(t, m)
	if r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--approve", "auto", "count")...); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if matches, _ := filepath.Glob(filepath.Join(e.work, ".rein", "spill", "*")); len(matches) == 0 {
		t.Fatal("the run spilled nothing: the test checks nothing")
	}
	if st := git("status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("git status after a run:\n%s", st)
	}
	// What a team shares stays visible.
	os.MkdirAll(filepath.Join(e.work, ".rein", "agents"), 0o755)
	os.WriteFile(filepath.Join(e.work, ".rein", "agents", "reviewer.md"), []byte("---\nname: reviewer\n---\nReview.\n"), 0o644)
	if st := git("status", "--porcelain", "--untracked-files=all"); st != "?? .rein/agents/reviewer.md\n" {
		t.Errorf("git status with a shared agent:\n%s", st)
	}
}

// A run and a resume on the JSONL store leave no lock behind: no lock
// file, no holder record on the session's file.
func TestRunLeavesNoLockFiles(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	dir := filepath.Join(e.home, "sessions")
	srv := llmtest.NewServer(t, llmtest.NewModel(llmtest.Reply("One."), llmtest.Reply("Two.")))
	for _, args := range [][]string{{"--new-session", "s-j", "first"}, {"--session", "s-j", "second"}} {
		r := e.run(w.env(), append([]string{"run", "--model", w.model, "--base-url", srv.URL, "--store", "jsonl:" + dir, "--cwd", e.work}, args...)...)
		if r.code != 0 {
			t.Fatalf("exit %d\n%s", r.code, r.stderr)
		}
		if locks, _ := filepath.Glob(filepath.Join(dir, "*.lock")); len(locks) != 0 {
			t.Errorf("lock files after a clean exit: %v", locks)
		}
		log := filepath.Join(dir, "s-j.jsonl")
		if _, err := os.Stat(log); err != nil {
			t.Fatalf("the session's log: %v", err)
		}
		buf := make([]byte, 256)
		if n, err := unix.Getxattr(log, "user.rein.holder", buf); err == nil {
			t.Errorf("holder record after a clean exit: %q", buf[:n])
		}
	}
}
