package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/fs"
	"github.com/reinhq/rein/tool/sandbox"
)

var errTooLong = &llm.ProviderError{Kind: llm.ErrContextTooLong, StatusCode: 400, Message: "prompt is too long"}

// loopModel drives a long tool loop: it calls the fetch tool until steps
// calls are made, answers summary requests, and — like a provider —
// refuses a request whose estimated size (bytes of its JSON / 4) is over
// limit.
type loopModel struct {
	mu          sync.Mutex
	limit       int64
	steps       int
	failSummary func(n int) error // nil: summaries succeed

	n         int     // tool calls made
	summaries int     // summary requests seen
	overflows int     // requests refused as too long
	sizes     []int64 // estimated size of each loop request answered
	summaryAt []int   // len(sizes) when each summary succeeded
}

func (l *loopModel) script(n int) []llmtest.Entry {
	out := make([]llmtest.Entry, n)
	for i := range out {
		out[i] = llmtest.Respond(l.respond)
	}
	return out
}

func requestSize(req *llm.Request) int64 {
	b, _ := json.Marshal(req)
	return int64(len(b)) / 4
}

func isSummary(req *llm.Request) bool {
	return len(req.System) == 1 && req.System[0].Text == agent.DefaultCompactPrompt
}

func (l *loopModel) respond(req *llm.Request) llmtest.Entry {
	l.mu.Lock()
	defer l.mu.Unlock()
	size := requestSize(req)
	if l.limit > 0 && size > l.limit {
		l.overflows++
		return llmtest.Fail(errTooLong)
	}
	if isSummary(req) {
		l.summaries++
		if l.failSummary != nil {
			if err := l.failSummary(l.summaries); err != nil {
				return llmtest.Fail(err)
			}
		}
		l.summaryAt = append(l.summaryAt, len(l.sizes))
		return llmtest.Reply(fmt.Sprintf("SUMMARY %d: fetched pages 1 to %d.", l.summaries, l.n))
	}
	l.sizes = append(l.sizes, size)
	if l.n < l.steps {
		l.n++
		return llmtest.CallTool(fmt.Sprintf("c%d", l.n), "fetch", fmt.Sprintf(`{"page":%d}`, l.n))
	}
	return llmtest.Reply("done")
}

// fetchTool returns about size bytes per call.
func fetchTool(size int) tool.Tool {
	return funcTool("fetch", func(_ context.Context, c *tool.Call) (*tool.Result, error) {
		line := fmt.Sprintf("page %s: lorem ipsum dolor sit amet consectetur\n", c.Args)
		return tool.Text(strings.Repeat(line, size/len(line)+1)[:size]), nil
	})
}

func compactions(evs []session.Event) []session.Event {
	var out []session.Event
	for _, ev := range evs {
		if _, ok := ev.Data.(*session.Compaction); ok {
			out = append(out, ev)
		}
	}
	return out
}

// checkCut fails when a compaction's range ends anywhere but just before
// an assistant message (or at its own event): a tool pair would be split.
func checkCut(t *testing.T, evs []session.Event) {
	t.Helper()
	bySeq := map[int64]session.Event{}
	for _, ev := range evs {
		bySeq[ev.Seq] = ev
	}
	for _, ev := range compactions(evs) {
		c := ev.Data.(*session.Compaction)
		if c.FromSeq != 1 || c.ToSeq >= ev.Seq {
			t.Errorf("compaction at %d covers %d..%d", ev.Seq, c.FromSeq, c.ToSeq)
		}
		next := bySeq[c.ToSeq+1]
		if _, ok := next.Data.(*session.AssistantMessage); !ok && c.ToSeq+1 != ev.Seq {
			t.Errorf("compaction at %d ends at %d, before a %s: a tool pair may be split", ev.Seq, c.ToSeq, next.Data.EventType())
		}
	}
}

func TestCompactAutoAtThreshold(t *testing.T) {
	l := &loopModel{limit: 7000, steps: 14}
	hooks, progress := watchCompaction()
	h := fetchHarness(t, l, &agent.CompactionOptions{KeepSteps: 2}, hooks)
	res := h.run("fetch the pages")
	h.a.Close() // every event has reached the observer
	var notices []agent.CompactPhase
	for _, ev := range progress() {
		notices = append(notices, agent.CompactPhase(ev.Data.(*session.CompactionProgress).Phase))
	}
	if res.Text != "done" {
		t.Fatalf("text = %q", res.Text)
	}
	evs := h.events()
	comps := compactions(evs)
	if len(comps) == 0 || l.overflows != 0 {
		t.Fatalf("compactions = %d, overflows = %d; sizes %v", len(comps), l.overflows, l.sizes)
	}
	checkCut(t, evs)
	c := comps[0].Data.(*session.Compaction)
	if c.TokensAfter >= c.TokensBefore || c.TokensBefore < 5600 {
		t.Errorf("tokens %d -> %d, want a drop from at least the threshold 5600", c.TokensBefore, c.TokensAfter)
	}
	// The next request is smaller and carries the summary and the kept
	// steps verbatim.
	at := l.summaryAt[0]
	if l.sizes[at] >= l.sizes[at-1] {
		t.Errorf("request after the compaction has %d tokens, before %d", l.sizes[at], l.sizes[at-1])
	}
	var after *llm.Request
	for _, req := range h.m.Requests() {
		if !isSummary(req) && containsText(req, "earlier conversation was compacted") {
			after = req
			break
		}
	}
	if after == nil {
		for _, req := range h.m.Requests() {
			t.Log(requestTexts(req))
		}
		t.Fatal("no request carries the summary")
	}
	var calls []string
	for _, m := range after.Messages {
		for _, tc := range m.ToolCalls() {
			calls = append(calls, string(tc.ID))
		}
	}
	if len(calls) != 2 {
		t.Errorf("calls kept verbatim = %v, want the last 2", calls)
	}
	var phases []agent.CompactPhase // with repeats folded
	for _, p := range notices {
		if len(phases) == 0 || phases[len(phases)-1] != p {
			phases = append(phases, p)
		}
	}
	if diff := cmp.Diff([]agent.CompactPhase{agent.CompactStart, agent.CompactProgress, agent.CompactEnd}, phases[:3]); diff != "" {
		t.Errorf("notices (-want +got):\n%s", diff)
	}
	// The log keeps the originals.
	if got := len(ofType[*session.ToolResult](evs)); got != 14 {
		t.Errorf("tool results on the log = %d, want 14", got)
	}
}

func TestCompactSummaryFailureLeavesLogUnchanged(t *testing.T) {
	l := &loopModel{steps: 13, failSummary: func(n int) error {
		if n == 1 {
			return errBoom
		}
		return nil
	}}
	hooks, progress := watchCompaction()
	h := fetchHarness(t, l, &agent.CompactionOptions{KeepSteps: 2}, hooks)
	// Stop right after the first, failing, compaction: the run goes on.
	res := h.run("fetch")
	if res.Text != "done" {
		t.Fatalf("text = %q", res.Text)
	}
	h.a.Close() // every event has reached the observer
	var failed []string
	for _, ev := range progress() {
		if p := ev.Data.(*session.CompactionProgress); p.Phase == string(agent.CompactFailed) {
			failed = append(failed, p.Error)
		}
	}
	if len(failed) != 1 || !strings.Contains(failed[0], errBoom.Error()) {
		t.Fatalf("failures = %v", failed)
	}
	evs := h.events()
	// The failure wrote nothing: the first compaction on the log came from
	// the second, successful attempt, one step later.
	comps := compactions(evs)
	if len(comps) != 1 || l.summaries < 2 {
		t.Fatalf("compactions = %d, summary calls = %d", len(comps), l.summaries)
	}
	for _, rep := range ofType[*session.Repair](evs) {
		t.Errorf("unexpected repair %+v", rep)
	}
	if strings.Contains(comps[0].Data.(*session.Compaction).Summary, "SUMMARY 1:") {
		t.Errorf("summary = %q", comps[0].Data.(*session.Compaction).Summary)
	}
}

func TestCompactCircuitBreaker(t *testing.T) {
	l := &loopModel{steps: 18, failSummary: func(int) error { return errBoom }}
	h := fetchHarness(t, l, &agent.CompactionOptions{KeepSteps: 2, MaxFailures: 3}, nil)
	if res := h.run("fetch"); res.Text != "done" {
		t.Fatalf("text = %q", res.Text)
	}
	if l.summaries != 3 {
		t.Errorf("summary calls = %d, want 3 then no more", l.summaries)
	}
	evs := h.events()
	reps := ofType[*session.Repair](evs)
	if len(reps) != 1 || reps[0].Kind != "compaction-disabled" {
		t.Errorf("repairs = %+v", reps)
	}
	if len(compactions(evs)) != 0 {
		t.Error("a failed compaction was written")
	}
	// The breaker is per run: the next run tries again.
	l.mu.Lock()
	l.steps, l.failSummary = l.n+1, nil
	l.mu.Unlock()
	h.run("one more")
	if got := len(compactions(h.events())); got != 1 {
		t.Errorf("compactions in the next run = %d, want 1", got)
	}
}

func TestB31_OverflowCompactsBeforeEliding(t *testing.T) {
	// The provider's real limit (5000) is below what the threshold
	// (0.99 of 7000) allows: the request overflows before the threshold
	// and the loop compacts, then retries, eliding nothing.
	l := &loopModel{limit: 5000, steps: 12}
	h := fetchHarness(t, l, &agent.CompactionOptions{KeepSteps: 2, Threshold: 0.99}, nil)
	if res := h.run("fetch"); res.Text != "done" {
		t.Fatalf("text = %q", res.Text)
	}
	evs := h.events()
	if l.overflows == 0 || len(compactions(evs)) == 0 {
		t.Fatalf("overflows = %d, compactions = %d", l.overflows, len(compactions(evs)))
	}
	for _, rep := range ofType[*session.Repair](evs) {
		t.Errorf("repair %+v: compaction should have made room", rep)
	}
	checkCut(t, evs)
}

func TestB31_OverflowWithoutRoomFailsCleanlyWithCompaction(t *testing.T) {
	// Nothing can shrink a prompt that alone is over the limit, even with
	// compaction on.
	l := &loopModel{limit: 100, steps: 0}
	h := newHarness(t, &agent.Options{ContextWindow: 8000, OutputReserve: 1000, Compaction: &agent.CompactionOptions{}}, l.script(5)...)
	_, err := h.a.Run(context.Background(), &agent.RunRequest{Prompt: strings.Repeat("huge ", 200)})
	var te *agent.TurnError
	if !errors.As(err, &te) || llm.KindOf(err) != llm.ErrContextTooLong || !strings.Contains(err.Error(), "context window") {
		t.Fatalf("err = %v", err)
	}
	if lastEnd(t, h.events()).Reason != session.EndError {
		t.Error("the turn did not end with an error")
	}
}

func TestCompactManualWhileRunningIsRefused(t *testing.T) {
	g := newGateTool("work")
	h := newHarness(t, &agent.Options{Tools: []tool.Tool{g}}, llmtest.CallTool("c1", "work", `{}`), llmtest.Reply("ok"))
	done := h.runAsync("go")
	waitStarted(t, g.started)
	if _, err := h.a.Compact(context.Background(), nil); !errors.Is(err, agent.ErrCompactBusy) {
		t.Errorf("Compact during a run = %v, want ErrCompactBusy", err)
	}
	close(g.release)
	<-done
	if len(compactions(h.events())) != 0 {
		t.Error("a compaction was written")
	}
}

// listener records the sessions it was told were compacted.
type listener struct {
	tool.Tool
	got []session.ID
}

func (l *listener) Compacted(_ context.Context, s session.ID) { l.got = append(l.got, s) }

// forgetful is a host's read tool that forgets the files read in a
// session when the agent tells it of a compaction.
type forgetful struct {
	tool.Tool
	rs *fs.ReadState
}

func (f *forgetful) Unwrap() tool.Tool { return f.Tool }

func (f *forgetful) Compacted(_ context.Context, s session.ID) { f.rs.Forget(string(s)) }

// watchCompaction returns hooks observing compaction progress, and what
// they saw once the agent is closed.
// fetchHarness runs l's script of fetches (2,000 tokens each) in an
// 8,000-token window, with compaction c and hooks (nil for none).
func fetchHarness(t *testing.T, l *loopModel, c *agent.CompactionOptions, hooks *hook.Set) *harness {
	t.Helper()
	return newHarness(t, &agent.Options{
		Tools:         []tool.Tool{fetchTool(2000)},
		ContextWindow: 8000, OutputReserve: 1000,
		Compaction: c, Hooks: hooks,
	}, l.script(40)...)
}

func watchCompaction() (*hook.Set, func() []session.Event) {
	var mu sync.Mutex
	var evs []session.Event
	hs := new(hook.Set).Observe("compaction", session.TypeCompactionProgress, func(ev session.Event) {
		mu.Lock()
		evs = append(evs, ev)
		mu.Unlock()
	})
	return hs, func() []session.Event {
		mu.Lock()
		defer mu.Unlock()
		return evs
	}
}

func TestCompactManualReattachesReadsAndForgetsReadState(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("the answer is 42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rs := fs.NewReadState()
	var read tool.Tool
	for _, tl := range fs.NewTools(&sandbox.Policy{Root: dir}, &fs.Options{State: rs}) {
		if tl.Spec().Name == "read" {
			read = tl
		}
	}
	lis := &listener{Tool: echoTool()}
	hooks, progress := watchCompaction()
	var h *harness
	h = newHarness(t, &agent.Options{
		// The host ties the read state to the read tool, which forgets
		// what the model has seen when the agent tells it of a compaction.
		Tools: []tool.Tool{&forgetful{Tool: read, rs: rs}, lis},
		Hooks: hooks,
	},
		llmtest.CallTool("r1", "read", `{"path":"notes.txt"}`),
		llmtest.CallTool("e1", "echo", `{"text":"noted"}`),
		llmtest.Reply("read it"),
		llmtest.Reply("SUMMARY: the user asked to read notes.txt."),
		llmtest.CallTool("r2", "read", `{"path":"notes.txt"}`),
		llmtest.Reply("read it again"),
	)
	h.run("read notes.txt")
	res, err := h.a.Compact(context.Background(), &agent.CompactRequest{KeepSteps: 1, Instructions: "keep file names"})
	if err != nil {
		t.Fatalf("Compact: %v", err)
	}
	if res.Reattached != 1 || res.TokensAfter <= 0 || res.Chunks != 1 {
		t.Errorf("result = %+v", res)
	}
	sumReq := h.m.Requests()[3]
	if !isSummary(sumReq) || !containsText(sumReq, "keep file names") || !containsText(sumReq, "the answer is 42") {
		t.Errorf("summary request = %v", requestTexts(sumReq))
	}
	h.run("read it again")
	evs := h.events()
	starts := ofType[*session.TurnStart](evs)
	if starts[1].Trigger != agent.TriggerCompact {
		t.Errorf("compaction turn trigger = %q", starts[1].Trigger)
	}
	ctxs := ofType[*session.ContextMessage](evs)
	if len(ctxs) != 1 || ctxs[0].Source != agent.SourceCompaction || !strings.Contains(partText(ctxs[0].Parts), "the answer is 42") {
		t.Errorf("re-attached context = %+v", ctxs)
	}
	next := h.m.Requests()[4]
	if !containsText(next, "SUMMARY: the user asked") || !containsText(next, "the answer is 42") || containsText(next, "call r1") {
		t.Errorf("request after compaction = %v", requestTexts(next))
	}
	// The read state was forgotten: the second read returns the content,
	// not a note that the file is unchanged.
	if got := resultText(results(evs)["r2"]); !strings.Contains(got, "the answer is 42") {
		t.Errorf("read after compaction = %q", got)
	}
	h.a.Close() // every event has reached the observer
	var ends []session.Event
	for _, ev := range progress() {
		if ev.Data.(*session.CompactionProgress).Phase == string(agent.CompactEnd) {
			ends = append(ends, ev)
		}
	}
	if len(ends) != 1 || ends[0].Session != h.a.Session() || ends[0].Data.(*session.CompactionProgress).TokensAfter <= 0 || ends[0].Data.(*session.CompactionProgress).TokensBefore <= 0 {
		t.Errorf("end notices = %+v", ends)
	}
	if len(lis.got) != 1 || lis.got[0] != h.a.Session() {
		t.Errorf("listener told %v", lis.got)
	}
}

func partText(parts []llm.Part) string {
	var s string
	for _, p := range parts {
		if t, ok := p.(*llm.Text); ok {
			s += t.Text
		}
	}
	return s
}

func TestCompactNothingToCompact(t *testing.T) {
	h := newHarness(t, nil, llmtest.Reply("hi"))
	if _, err := h.a.Compact(context.Background(), nil); !errors.Is(err, agent.ErrNothingToCompact) {
		t.Errorf("empty session: %v", err)
	}
	h.run("hello")
	if _, err := h.a.Compact(context.Background(), &agent.CompactRequest{KeepSteps: 1}); !errors.Is(err, agent.ErrNothingToCompact) {
		t.Errorf("one step, keep one: %v", err)
	}
}

// A steer sent while a long tool runs is recorded without any pairing
// repair, and the next request pairs the call with its result.
func TestSteerDuringLongToolRecordsNoRepair(t *testing.T) {
	h, out := steerDuringTool(t, "also check the tests")
	if out.err != nil {
		t.Fatal(out.err)
	}
	evs := h.events()
	for _, rep := range ofType[*session.Repair](evs) {
		t.Errorf("repair %+v", rep)
	}
	if got := requestTexts(h.m.Requests()[1]); !strings.HasPrefix(got[2], "result c1: work done") {
		t.Errorf("second request = %v", got)
	}
}

// A result that takes the history over the threshold is compacted before
// the next request, though the step that holds it is written with the
// next step's start: the check counts what is still to be written. So no
// request before the first summary holds messages over the threshold.
func TestCompactAutoRightAfterTheResultThatCrosses(t *testing.T) {
	const threshold = 8000 // 80% of the window less the reserve
	l := &loopModel{steps: 12}
	h := newHarness(t, &agent.Options{
		Tools:         []tool.Tool{fetchTool(4000)}, // about 1,000 tokens a result
		ContextWindow: 11000, OutputReserve: 1000,
		Compaction: &agent.CompactionOptions{KeepSteps: 2},
	}, l.script(40)...)
	if res := h.run("fetch the pages"); res.Text != "done" {
		t.Fatalf("text = %q", res.Text)
	}
	if comps := compactions(h.events()); len(comps) == 0 {
		t.Fatal("no compaction")
	}
	for i, req := range h.m.Requests() {
		if isSummary(req) {
			break
		}
		if n := agent.EstimateTokens(req.Messages); n >= threshold {
			t.Errorf("request %d went out with %d tokens of messages, over the threshold %d", i, n, threshold)
		}
	}
}
