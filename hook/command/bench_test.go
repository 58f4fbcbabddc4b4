package command_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/hook/command"
	"github.com/reinhq/rein/llm"
)

func benchGate(b *testing.B, settings string) {
	entries, err := command.Parse([]byte(settings), "bench.json", false)
	if err != nil {
		b.Fatal(err)
	}
	r, err := command.New(entries, &command.Options{Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	chain := hook.Join(r.Hooks(), nil)
	ctx := context.Background()
	args := json.RawMessage(`{"path":"a.txt","content":"hello"}`)
	b.ReportAllocs()
	for b.Loop() {
		in := &hook.ToolInput{Call: llm.ToolCall{ID: "c1", Name: "write", Args: args}}
		if _, err := hook.PreToolUse.Run(ctx, chain, in); err != nil {
			b.Fatal(err)
		}
	}
}

func settingsFor(matcher string, commands ...string) string {
	var hs []map[string]any
	for _, c := range commands {
		hs = append(hs, map[string]any{"type": "command", "command": c})
	}
	s, _ := json.Marshal(map[string]any{"hooks": map[string]any{"PreToolUse": []any{map[string]any{"matcher": matcher, "hooks": hs}}}})
	return string(s)
}

// BenchmarkHookExit0 is the cost of one hook process per tool call: fork,
// exec of /bin/sh, the JSON on stdin, wait.
func BenchmarkHookExit0(b *testing.B) { benchGate(b, settingsFor("Write", "exit 0")) }

// BenchmarkHookJSONAnswer adds reading stdin and decoding a JSON answer.
func BenchmarkHookJSONAnswer(b *testing.B) {
	benchGate(b, settingsFor("Write", `cat >/dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"allow"}}'`))
}

// BenchmarkHookFourParallel runs four hooks of one event.
func BenchmarkHookFourParallel(b *testing.B) {
	benchGate(b, settingsFor("*", "exit 0 # 1", "exit 0 # 2", "exit 0 # 3", "exit 0 # 4"))
}

// BenchmarkHookNoMatch is a call no hook's matcher selects: no process.
func BenchmarkHookNoMatch(b *testing.B) { benchGate(b, settingsFor("Bash", "exit 0")) }
