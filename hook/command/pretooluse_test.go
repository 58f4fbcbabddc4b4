package command_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/session"
)

func TestPreToolUseExit2DeniesWrite(t *testing.T) {
	r := writeRig(t, "PreToolUse", "Write", `echo "writes are frozen" >&2; exit 2`)
	res := r.run(t, "write a.txt")
	if r.exists("a.txt") {
		t.Fatal("a.txt was written despite the hook's exit 2")
	}
	if diff := cmp.Diff([]string{"gate-block|BLOCKED|Blocked: writes are frozen"}, toolResults(res)); diff != "" {
		t.Errorf("tool results (-want +got):\n%s", diff)
	}
	if !strings.Contains(lastRequestText(r.model), "Blocked: writes are frozen") {
		t.Errorf("the model did not see the block reason:\n%s", lastRequestText(r.model))
	}
	if got := hookEvents(res); len(got) != 1 || !strings.HasPrefix(got[0], "pre-tool-use deny writes are frozen") {
		t.Errorf("hook.decision events = %q, want one pre-tool-use deny", got)
	}
	reps := commandReports(t, res)
	if len(reps) != 1 {
		t.Fatalf("command reports on the log = %+v, want one", reps)
	}
	if c := reps[0]; c.Event != "PreToolUse" || c.ExitCode != 2 || c.Decision != "deny" || !strings.Contains(c.Command, "exit 2") || !strings.Contains(c.Reason, "writes are frozen") {
		t.Errorf("command report = %+v, want the command, exit 2, deny and its reason", c)
	}
}

// blockedWrite runs a write under the PreToolUse hook body for tools
// matching matcher, fails unless the hook, for why, kept it from running,
// and returns the tool results.
func blockedWrite(t *testing.T, matcher, body, why string) []string {
	t.Helper()
	r, res := writeRun(t, "PreToolUse", matcher, body)
	if r.exists("a.txt") {
		t.Fatalf("a.txt was written despite %s", why)
	}
	return toolResults(res)
}

func TestPreToolUseJSONDeny(t *testing.T) {
	body := `cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny","permissionDecisionReason":"no writes to secrets"}}'`
	got := blockedWrite(t, "write|edit", body, "permissionDecision deny")
	if diff := cmp.Diff([]string{"gate-block|BLOCKED|Blocked: no writes to secrets"}, got); diff != "" {
		t.Errorf("tool results (-want +got):\n%s", diff)
	}
}

func TestPreToolUseUpdatedInputMovesFile(t *testing.T) {
	// The hook reads Claude's spelling (file_path) and answers with it.
	body := `in=$(cat); case "$in" in *'"file_path":"a.txt"'*) echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"file_path":"moved/b.txt"}}}';; esac`
	r, res := writeRun(t, "PreToolUse", "Write", body)
	if r.exists("a.txt") {
		t.Error("a.txt written: the edit was not applied")
	}
	got, err := os.ReadFile(filepath.Join(r.dir, "moved", "b.txt"))
	if err != nil || string(got) != "hi" {
		t.Fatalf("moved/b.txt = %q, %v; want the content at the edited path (results %q)", got, err, toolResults(res))
	}
	if ev := hookEvents(res); len(ev) != 1 || !strings.HasPrefix(ev[0], "pre-tool-use edit") {
		t.Errorf("hook.decision events = %q, want one edit", ev)
	}
}

func TestPreToolUseUpdatedInputBreakingSchemaIsRejected(t *testing.T) {
	body := `cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","updatedInput":{"path":{"dir":"x"}}}}'`
	got := blockedWrite(t, "", body, "an invalid edit")
	if len(got) != 1 || !strings.HasPrefix(got[0], "invalid-input|") {
		t.Errorf("tool results = %q, want one invalid-input result", got)
	}
}

func TestHookTimeoutFailsClosed(t *testing.T) {
	r := writeRig(t, "PreToolUse", "*", "timeout=0.3 sleep 30")
	start := time.Now()
	res := r.run(t, "go")
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("run took %v; the hung hook was not killed", d)
	}
	if r.exists("a.txt") {
		t.Fatal("the call ran although its gate timed out")
	}
	got := toolResults(res)
	if len(got) != 1 || !strings.Contains(got[0], "timed out") || !strings.Contains(got[0], agent.CodeHookError) {
		t.Errorf("tool results = %q, want a hook error naming the timeout", got)
	}
	if d := r.decisions(); len(d) != 1 || d[0] != "PreToolUse error" {
		t.Errorf("reports = %q", d)
	}
}

func TestExit1IsNonBlocking(t *testing.T) {
	r, res := writeRun(t, "PreToolUse", "Write", `echo "linter missing" >&2; exit 1`)
	if !r.exists("a.txt") {
		t.Fatal("exit 1 blocked the call; it must not")
	}
	if res.Reason != session.EndCompleted {
		t.Errorf("end = %q", res.Reason)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reports) != 1 || r.reports[0].Decision != "error" || r.reports[0].ExitCode != 1 || !strings.Contains(r.reports[0].Reason, "linter missing") {
		t.Errorf("reports = %+v, want one non-blocking error with exit 1", r.reports)
	}
	// The error is on the session log too, not only shown.
	if reps := commandReports(t, res); len(reps) != 1 || reps[0].Decision != "error" || reps[0].ExitCode != 1 || !strings.Contains(reps[0].Reason, "linter missing") {
		t.Errorf("command reports on the log = %+v, want the non-blocking error with exit 1", reps)
	}
}

func TestPermissionAllowAndAsk(t *testing.T) {
	tests := []struct {
		name    string
		answers []string // permissionDecision of each parallel hook
		written bool
	}{
		{"allow", []string{"allow"}, true},
		{"ask with no approver is denied", []string{"ask"}, false},
		{"ask wins over allow", []string{"allow", "ask"}, false},
		{"deny wins over ask and allow", []string{"allow", "deny", "ask"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cmds []string
			for i, a := range tt.answers {
				// Distinct commands: identical ones run once.
				cmds = append(cmds, `cat >/dev/null; echo '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"`+a+`","permissionDecisionReason":"r`+string(rune('0'+i))+`"}}'`)
			}
			r, res := writeRun(t, "PreToolUse", "", cmds...)
			if got := r.exists("a.txt"); got != tt.written {
				t.Errorf("written = %v, want %v (results %q, decisions %q)", got, tt.written, toolResults(res), hookEvents(res))
			}
		})
	}
}

func TestEditsApplyInConfigurationOrder(t *testing.T) {
	// Both hooks run in parallel on the original input; their edits are
	// merged in the order they are configured, the later winning. The
	// first finishes last: it reads a FIFO to its end, which comes when
	// the second, holding the FIFO open, has exited.
	fifo := filepath.Join(t.TempDir(), "second-done")
	if out, err := exec.Command("mkfifo", fifo).CombinedOutput(); err != nil {
		t.Skipf("mkfifo: %v %s", err, out)
	}
	first := `timeout=10 cat >/dev/null; cat ` + fifo + ` >/dev/null; echo '{"hookSpecificOutput":{"updatedInput":{"path":"first.txt","content":"one"}}}'`
	second := `timeout=10 exec 3>` + fifo + `; cat >/dev/null; echo '{"hookSpecificOutput":{"updatedInput":{"path":"second.txt"}}}'`
	r := writeRig(t, "PreToolUse", "Write", first, second)
	r.run(t, "go")
	b, err := os.ReadFile(filepath.Join(r.dir, "second.txt"))
	if err != nil || string(b) != "one" {
		t.Errorf("second.txt = %q, %v; want the merged edit (content from the first, path from the second)", b, err)
	}
	if r.exists("first.txt") || r.exists("a.txt") {
		t.Error("a file landed at a path the later edit replaced")
	}
}

func TestHooksRunInParallel(t *testing.T) {
	// Each hook marks that it started, then waits for all four marks: run
	// one after another, the first would wait out its time limit alone.
	marks := t.TempDir()
	hook := func(i int) string {
		return fmt.Sprintf(`timeout=10 cat >/dev/null; touch %s/%d; until [ "$(ls %s | wc -l)" -ge 4 ]; do sleep 0.01; done`, marks, i, marks)
	}
	r := writeRig(t, "PreToolUse", "", hook(0), hook(1), hook(2), hook(3))
	start := time.Now()
	res := r.run(t, "go")
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("four hooks waiting for each other took %v; they should run in parallel", d)
	}
	if n := len(r.decisions()); n != 4 {
		t.Errorf("reports = %d, want 4", n)
	}
	if !r.exists("a.txt") {
		t.Errorf("the write did not run after its four hooks: results %q, reports %q", toolResults(res), r.decisions())
	}
}
