package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm/llmtest"
)

// readmeCommands are the shell lines of the README's first sections (up
// to the library's), as a newcomer would paste them.
func readmeCommands(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	inBlock := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "## Use it as a library"):
			return out
		case strings.HasPrefix(line, "```"):
			inBlock = line == "```sh" && !inBlock
		case inBlock && strings.TrimSpace(line) != "" && !strings.HasPrefix(strings.TrimSpace(line), "#"):
			out = append(out, line)
		}
	}
	t.Fatal("README.md has no '## Use it as a library' section to stop at")
	return nil
}

// shellWords splits a command line the way sh would for the README's
// lines: words, "double" and 'single' quotes, a trailing # comment, and a
// > redirection, which is returned apart.
func shellWords(line string) (words []string, redirect string) {
	var cur strings.Builder
	inWord, quote := false, rune(0)
	flush := func() {
		if inWord {
			words = append(words, cur.String())
		}
		cur.Reset()
		inWord = false
	}
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == '#' && !inWord:
			flush()
			goto done
		case r == ' ' || r == '\t':
			flush()
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	flush()
done:
	for i, w := range words {
		if w == ">" && i+1 < len(words) {
			return words[:i], words[i+1]
		}
	}
	return words, ""
}

// TestReadmeFirstTenMinutes runs every command of the README's first
// sections, in order, against the fake provider server, in an empty home
// with a copy of the examples, and checks each does what the README says.
func TestReadmeFirstTenMinutes(t *testing.T) {
	e := newEnv(t)
	if err := copyTree(filepath.Join("..", "..", "examples"), filepath.Join(e.work, "examples")); err != nil {
		t.Fatal(err)
	}
	answers := []string{"Package agent runs the loop.", "An agent harness for Go."}
	var script []llmtest.Entry
	for _, a := range answers {
		script = append(script, llmtest.Reply(a))
	}
	srv := llmtest.NewServer(t, llmtest.NewModel(script...))
	keyEnv := []string{"ANTHROPIC_BASE_URL=" + srv.URL}
	runs := 0
	for _, line := range readmeCommands(t) {
		words, redirect := shellWords(line)
		switch {
		case len(words) >= 2 && words[0] == "go" && words[1] == "test":
			continue // this test is one of them
		case len(words) >= 2 && words[0] == "go" && words[1] == "install":
			continue // the module proxy is not the point here: the binary is built
		case len(words) == 2 && words[0] == "export":
			name, _, _ := strings.Cut(words[1], "=")
			keyEnv = append(keyEnv, name+"=sk-test-secret-key")
			continue
		case len(words) >= 3 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/rein":
			words = words[3:]
		case len(words) >= 1 && words[0] == "rein":
			words = words[1:]
		default:
			t.Fatalf("README line %q: the test does not know how to run it; teach it", line)
		}
		if len(words) == 0 {
			t.Fatalf("README line %q names no command", line)
		}
		t.Logf("$ rein %s", strings.Join(words, " "))
		switch words[0] {
		case "run":
			// The first command comes before the README's export: the
			// newcomer has a key already, as its comment says.
			env := append([]string{"ANTHROPIC_API_KEY=sk-test-secret-key"}, keyEnv...)
			r := e.run(env, words...)
			if r.code != 0 || r.stdout != answers[runs]+"\n" || !strings.Contains(r.stderr, "session ") {
				t.Errorf("%q: exit %d, stdout %q, stderr:\n%s", line, r.code, r.stdout, r.stderr)
			}
			runs++
		case "replay":
			r := e.run(nil, words...)
			if r.code != 0 || !strings.Contains(r.stderr, "; 0 divergences\n") || r.stdout == "" {
				t.Errorf("%q: exit %d, stdout %q, stderr:\n%s", line, r.code, r.stdout, r.stderr)
			}
		case "chat":
			s := startTmux(t, e, append([]string{"ANTHROPIC_API_KEY=sk-test-secret-key"}, keyEnv...), words...)
			s.waitFor(idlePrompt)
		case "completion":
			r := e.run(nil, words...)
			if r.code != 0 || !strings.Contains(r.stdout, "complete") || redirect == "" {
				t.Errorf("%q: exit %d, %d bytes of script\n%s", line, r.code, len(r.stdout), r.stderr)
			}
		default:
			t.Errorf("README line %q runs rein %s, which the test does not check; teach it what the README says it does", line, words[0])
		}
	}
	if runs != len(answers) {
		t.Errorf("the README has %d 'rein run' commands, the test expected %d", runs, len(answers))
	}

	// "With no model configured and no key set, rein run exits 2 and says
	// exactly which variable to set, or how to use a local server, or how
	// to try rein offline."
	r := e.run(nil, "run", "explain what this repository does")
	for _, want := range []string{"ANTHROPIC_API_KEY", "ollama", "rein replay examples/sessions/hello.ndjson"} {
		if r.code != 2 || !strings.Contains(r.stderr, want) {
			t.Errorf("no key: exit %d, stderr lacks %q:\n%s", r.code, want, r.stderr)
		}
	}
	// The sessions the two runs left are this workspace's (beside the
	// chat's, still open).
	r = e.run(nil, "sessions", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "  explain what this repository does\n") || !strings.Contains(r.stdout, "  list the Go packages in this repository and say what each does\n") {
		t.Errorf("sessions list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestShellWords(t *testing.T) {
	words, redirect := shellWords(`go run ./cmd/rein run "list the Go packages" -   # a comment`)
	if strings.Join(words, "|") != `go|run|./cmd/rein|run|list the Go packages|-` || redirect != "" {
		t.Errorf("words %q, redirect %q", words, redirect)
	}
	words, redirect = shellWords(`rein completion bash > /etc/bash_completion.d/rein   # or: zsh, fish`)
	if strings.Join(words, "|") != `rein|completion|bash` || redirect != "/etc/bash_completion.d/rein" {
		t.Errorf("words %q, redirect %q", words, redirect)
	}
}
