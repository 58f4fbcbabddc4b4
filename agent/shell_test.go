package agent_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/internal/testwait"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool/sandbox"
	"github.com/reinhq/rein/tool/shell"
)

// processAlive reports whether a process whose command line holds marker
// is running.
func processAlive(marker string) bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		data, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(data), marker) {
			return true
		}
	}
	return false
}

// TestBackgroundTasksReportedAndKilledOnClose runs the real shell tools:
// a background task's exit is told to the model at the next step, and
// Close kills the task still running.
func TestBackgroundTasksReportedAndKilledOnClose(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("needs /proc")
	}
	root := t.TempDir()
	sh := shell.New(&shell.Options{Policy: &sandbox.Policy{Root: root}, SpillDir: t.TempDir()})
	// A marker of this run only: the same test elsewhere on the machine
	// must not be taken for this one's task.
	marker := fmt.Sprintf("37.%d%09d", os.Getpid(), rand.Int64N(1e9))
	// The exits the shell reported, kept until the loop polls its notices;
	// drain says how many it has reported in all.
	var mu sync.Mutex
	var exits []string
	reported := 0
	drain := func() int {
		mu.Lock()
		defer mu.Unlock()
		for _, e := range sh.Drain() {
			exits = append(exits, e.String())
			reported++
		}
		return reported
	}
	notices := func() []string {
		drain()
		mu.Lock()
		defer mu.Unlock()
		out := exits
		exits = nil
		return out
	}
	h := newHarness(t, &agent.Options{Tools: sh.Tools(), Closers: []io.Closer{sh}, Notices: notices},
		llmtest.CallTools(
			llm.ToolCall{ID: "bg1", Name: "shell", Args: []byte(`{"command":"sleep ` + marker + `","run_in_background":true}`)},
			llm.ToolCall{ID: "bg2", Name: "shell", Args: []byte(`{"command":"echo quick","run_in_background":true}`)}),
		// The model answers the second request once the quick task has
		// exited, so a step boundary before the third has told its exit.
		llmtest.Respond(func(*llm.Request) llmtest.Entry {
			if !testwait.For(5*time.Second, func() bool { return drain() > 0 }) {
				t.Error("the quick task never exited")
			}
			return llmtest.CallTool("fg", "shell", `{"command":"echo step"}`)
		}),
		llmtest.Reply("done"))
	h.run("start the server and a quick job")
	evs := h.events()
	for id, r := range results(evs) {
		if r.IsError {
			t.Fatalf("%s failed: %s", id, resultText(r))
		}
	}
	if !containsText(h.m.Requests()[2], "quick") {
		t.Errorf("the quick task's exit did not reach the model: %v", requestTexts(h.m.Requests()[2]))
	}
	if len(ofType[*session.ContextMessage](evs)) == 0 {
		t.Error("no notice was recorded")
	}
	if !processAlive(marker) {
		t.Fatal("the background task is not running before Close")
	}
	start := time.Now()
	if err := h.a.Close(); err != nil {
		t.Fatal(err)
	}
	if !testwait.For(5*time.Second, func() bool { return !processAlive(marker) }) {
		t.Fatal("Close left the background task running")
	}
	t.Logf("Close took %v", time.Since(start))
}
