package serve_test

import (
	"context"
	"iter"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// chromium finds the browser, or skips the test when none is installed.
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no chromium on PATH: install Debian's chromium package (.ci/run does) to run the browser tests")
	return ""
}

// gated holds the first response after its first text delta until gate
// is closed, so a test can see text that is still streaming.
func gated(gate <-chan struct{}) func(llm.Model) llm.Model {
	return func(m llm.Model) llm.Model {
		first := true
		return llm.ModelFunc(func(ctx context.Context, req *llm.Request) iter.Seq2[llm.Chunk, error] {
			hold := first
			first = false
			return func(yield func(llm.Chunk, error) bool) {
				for c, err := range m.Stream(ctx, req) {
					if !yield(c, err) {
						return
					}
					if _, ok := c.(*llm.TextDelta); ok && hold {
						hold = false
						select {
						case <-gate:
						case <-ctx.Done():
						}
					}
				}
			}
		})
	}
}

// artifactDir is where browser tests leave screenshots: $REIN_ARTIFACTS,
// else testdata/artifacts (ignored by git).
func artifactDir(t *testing.T) string {
	dir := os.Getenv("REIN_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("testdata", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(dir)
	return abs
}

func newBrowser(t *testing.T) context.Context {
	exe := chromium(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
	})
	return ctx
}

// TestBrowserTurnApprovalAndCost drives the page in a real browser: start
// a turn, see its text stream in, lose the connection and get it back,
// approve the write from its button, see the card complete and the cost
// move; the session view is saved as a screenshot.
func TestBrowserTurnApprovalAndCost(t *testing.T) {
	ctx := newBrowser(t)
	gate := make(chan struct{})
	f := newFixture(t, &fixtureOptions{wrap: gated(gate)},
		writeScript()...)
	id := f.create("")
	page := f.ts.URL + "/#token=" + testToken

	br := &browser{t: t, ctx: ctx}
	do, text, eval := br.do, br.text, br.eval
	type css = chromedp.CSS
	do("open the session",
		chromedp.Navigate(page),
		chromedp.WaitVisible(css(`#sessions li a`)),
		chromedp.Click(css(`#sessions li a`)),
		chromedp.WaitVisible(css(`#input`)),
		poll(`document.getElementById('conn').textContent === 'live'`),
		chromedp.WaitVisible(css(`[data-stat="cost"] b`)),
	)
	costBefore := text(`[data-stat="cost"] b`)
	do("start a turn and see text stream in",
		chromedp.SendKeys(css(`#input`), "Write hello.txt"),
		chromedp.Click(css(`#send`)),
		poll(`((document.querySelector('.msg.streaming .body') || {}).textContent || '').trim() === "I'll write"`),
	)
	if n := eval(`document.querySelectorAll('.msg.assistant:not(.streaming)').length`); n != 0 {
		t.Fatalf("%d final assistant messages while the response still streams", n)
	}
	close(gate)
	do("drop the connection while the write waits, and reconnect",
		chromedp.WaitVisible(css(`.card[data-call-id="w1"] .approve-allow`)),
		chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
			_, err := chromedp.Evaluate[any](`window.reinView.stream.drop(), true`)(ctx, tg)
			return err
		}),
		poll(`document.getElementById('conn').textContent === 'live'`),
	)
	saveShot(t, ctx, "session-waiting.png")
	do("approve the write from its button",
		chromedp.Click(css(`.card[data-call-id="w1"] .approve-allow`)),
		chromedp.WaitVisible(css(`.card[data-call-id="w1"][data-status="done"]`)),
		chromedp.WaitVisible(css(`.sep.end.completed`)),
		poll(`document.querySelector('[data-stat="cost"] b').textContent !== `+jsString(costBefore)),
	)
	costAfter := text(`[data-stat="cost"] b`)
	seqAttr, err := chromedp.Run(ctx, chromedp.AttributeValue(css(`#transcript`), "data-last-seq"))
	if err != nil {
		t.Fatal(err)
	}
	handledAttr, err := chromedp.Run(ctx, chromedp.AttributeValue(css(`#transcript`), "data-events"))
	if err != nil {
		t.Fatal(err)
	}
	cards := eval(`document.querySelectorAll('.card').length`)
	users := eval(`document.querySelectorAll('.msg.user').length`)
	steps := eval(`document.querySelectorAll('.step').length`)
	if n := eval(`document.querySelectorAll('.msg.streaming').length`); n != 0 {
		t.Errorf("%d streaming blocks left after the turn ended", n)
	}
	diff := text(`.card[data-call-id="w1"] .diff`)
	saveShot(t, ctx, "session-view.png")
	lastSeq, handled := seqAttr.Value, handledAttr.Value

	f.waitIdle(id)
	events := f.events(id)
	if want := events[len(events)-1].Seq; lastSeq != itoa(want) || handled != itoa(want) {
		t.Errorf("the page handled %s events up to seq %s, want each of the %d exactly once", handled, lastSeq, want)
	}
	if cards != 1 || users != 1 || steps != 2 {
		t.Errorf("page shows %d cards, %d prompts, %d steps; want 1, 1, 2 (nothing repeated after the reconnect)", cards, users, steps)
	}
	if !strings.Contains(diff, "+ Hello from the browser!") {
		t.Errorf("card diff %q, want the written lines", diff)
	}
	if costBefore != "$0.0000" || costAfter == costBefore {
		t.Errorf("cost %q → %q, want it to move from $0.0000", costBefore, costAfter)
	}
	b, err := os.ReadFile(filepath.Join(f.root, "hello.txt"))
	if err != nil || !strings.HasPrefix(string(b), "Hello from the browser!") {
		t.Errorf("hello.txt: %q, %v", b, err)
	}
	if status, _ := f.do("GET", "/v1/sessions/"+string(id), ""); status != http.StatusOK {
		t.Errorf("session: %d", status)
	}
}

func jsString(s string) string { return "'" + strings.ReplaceAll(s, "'", "\\'") + "'" }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// writeScript is a response that streams text, then asks to write
// hello.txt, and an answer after the write, with usage to price.
func writeScript() []llmtest.Entry {
	return []llmtest.Entry{
		llmtest.Chunks(
			&llm.BlockStart{Index: 0, Kind: llm.BlockText},
			&llm.TextDelta{Index: 0, Text: "I'll write "},
			&llm.TextDelta{Index: 0, Text: "**hello.txt** with a greeting:\n\n- one line\n- `plain` text"},
			&llm.BlockEnd{Index: 0},
			&llm.BlockStart{Index: 1, Kind: llm.BlockToolCall, ID: "w1", Name: "write"},
			&llm.ToolCallDelta{Index: 1, Args: `{"path":"hello.txt","content":"Hello from the browser!\nSecond line.\n"}`},
			&llm.BlockEnd{Index: 1},
			&llm.UsageChunk{Usage: llm.Usage{Input: 1200, Output: 80}},
			&llm.Finish{Reason: llm.FinishToolCalls},
		),
		llmtest.Reply("Done: `hello.txt` now greets you.").WithUsage(llm.Usage{Input: 150, Output: 20, CacheRead: 1200}),
	}
}

// browser runs a test's steps in its tab, failing the test on an error.
type browser struct {
	t   *testing.T
	ctx context.Context
}

func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.t.Fatalf("%s: %v", what, err)
	}
}

// text is the text of the element sel selects.
func (b *browser) text(sel string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.t.Fatalf("text of %s: %v", sel, err)
	}
	return v
}

// eval is the number a JavaScript expression evaluates to.
func (b *browser) eval(expr string) int {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](expr))
	if err != nil {
		b.t.Fatalf("%s: %v", expr, err)
	}
	return v
}

// poll waits until a JavaScript expression is true.
func poll(expr string) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[bool](expr, chromedp.WithPollingInterval(20*time.Millisecond))(ctx, tg)
		return err
	})
}

// saveShot saves a PNG screenshot of the page as a test artifact.
func saveShot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	out := filepath.Join(artifactDir(t), name)
	if err := os.WriteFile(out, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", out)
}

// TestBrowserSteerAndCancel: steer a running turn from the page, then
// cancel it with its button.
func TestBrowserSteerAndCancel(t *testing.T) {
	ctx := newBrowser(t)
	b := newBlocker()
	f := newFixture(t, &fixtureOptions{tools: []tool.Tool{b.tool()}}, llmtest.CallTool("c1", "wait", `{}`), llmtest.Hang())
	id := f.create("")
	br := &browser{t: t, ctx: ctx}
	type css = chromedp.CSS
	br.do("open the session and start a turn",
		chromedp.Navigate(f.ts.URL+"/#token="+testToken),
		chromedp.WaitVisible(css(`#sessions li a`)),
		chromedp.Click(css(`#sessions li a`)),
		poll(`document.getElementById('conn').textContent === 'live'`),
		chromedp.SendKeys(css(`#input`), "Wait a while"),
		chromedp.Click(css(`#send`)),
		chromedp.WaitVisible(css(`#steer`)),
	)
	<-b.started
	br.do("steer it",
		chromedp.SendKeys(css(`#input`), "also look at the docs"),
		chromedp.Click(css(`#steer`)),
		poll(`document.getElementById('input').value === ''`),
	)
	close(b.release)
	br.do("see the steer and cancel",
		chromedp.WaitVisible(css(`.msg.steer`)),
		chromedp.Click(css(`#cancel`)),
		chromedp.WaitVisible(css(`.sep.end.aborted`)),
		chromedp.WaitVisible(css(`#send`)),
	)
	if got := strings.ToLower(br.text(`.sep.end.aborted`)); !strings.Contains(got, "aborted (user)") {
		t.Errorf("turn end shown as %q, want aborted by the user", got)
	}
	f.waitIdle(id)
}

// TestBrowserSubagents: a turn that spawns a subagent shows the child
// under the spawn call's card, with its state, usage and answer; its
// activity streams into the card; the sessions list nests it under its
// parent; its link opens its own view, which links back to the parent.
func TestBrowserSubagents(t *testing.T) {
	ctx := newBrowser(t)
	b := newBlocker()
	f := newFixture(t, &fixtureOptions{tools: []tool.Tool{agent.SpawnTool(nil), b.tool()}},
		llmtest.CallTool("s1", agent.SpawnToolName, `{"task":"Count the files in the workspace.","label":"counter"}`),
		llmtest.CallTool("w1", "wait", `{}`).WithUsage(llm.Usage{Input: 200, Output: 6}),
		llmtest.Reply("There are **3** files.").WithUsage(llm.Usage{Input: 300, Output: 12}),
		llmtest.Reply("The counter found 3 files."),
	)
	id := f.create("")
	br := &browser{t: t, ctx: ctx}
	type css = chromedp.CSS
	const child = `.card[data-call-id="s1"] .subagent`
	br.do("start a turn that spawns a subagent and see it end",
		chromedp.Navigate(f.ts.URL+"/#token="+testToken),
		chromedp.WaitVisible(css(`#sessions li a`)),
		chromedp.Click(css(`#sessions li a`)),
		poll(`document.getElementById('conn').textContent === 'live'`),
		chromedp.SendKeys(css(`#input`), "How many files?"),
		chromedp.Click(css(`#send`)),
		chromedp.WaitVisible(css(child+`[data-status="running"]`)),
	)
	<-b.started
	br.do("follow the running child's activity live",
		chromedp.Click(css(child+` .activity summary`)),
		poll(`[...document.querySelectorAll('`+child+` .lines .line')].map(e => e.textContent).join('|') === 'task: Count the files in the workspace.|→ wait'`),
	)
	close(b.release)
	br.do("see the child end, and its activity with it",
		chromedp.WaitVisible(css(child+`[data-status="completed"]`)),
		chromedp.WaitVisible(css(`.sep.end.completed`)),
		poll(`[...document.querySelectorAll('`+child+` .lines .line')].map(e => e.textContent).join('|') === 'task: Count the files in the workspace.|→ wait|✓ wait|There are **3** files.|ended completed'`),
	)
	if got := br.text(child + ` .name`); got != "counter" {
		t.Errorf("subagent shown as %q, want its label counter", got)
	}
	if got := br.text(child + ` .answer`); !strings.Contains(got, "There are 3 files.") {
		t.Errorf("subagent answer %q, want the child's answer", got)
	}
	if got := br.text(child + ` .numbers`); !strings.Contains(got, "2 steps · 500 in · 18 out") {
		t.Errorf("subagent numbers %q, want its step and tokens", got)
	}
	f.waitIdle(id)
	var kid session.ID
	for ev := range slices.Values(f.events(id)) {
		if s, ok := ev.Data.(*session.SubagentStart); ok {
			kid = s.ChildSession
		}
	}
	if kid == "" {
		t.Fatal("the run recorded no subagent.start")
	}
	if got, _ := chromedp.Run(ctx, chromedp.AttributeValue(css(child), "data-child")); got.Value != string(kid) {
		t.Errorf("the card links child %q, want %q", got.Value, kid)
	}
	br.do("see the child nested under its parent in the sessions list",
		poll(`!!document.querySelector('#sessions li[data-session="`+string(id)+`"] ul.kids li[data-session="`+string(kid)+`"]')`),
	)
	saveShot(t, ctx, "subagent-view.png")
	br.do("open the child's own view, and go back to the parent from it",
		chromedp.Click(css(child+` .open`)),
		chromedp.WaitVisible(css(`#children a.parent`)),
		poll(`[...document.querySelectorAll('.msg.assistant .body')].some(e => e.textContent.includes('There are 3 files.'))`),
		chromedp.Click(css(`#children a.parent`)),
		chromedp.WaitVisible(css(child+`[data-status="completed"]`)),
	)
	if n := br.eval(`document.querySelectorAll('.subagent').length`); n != 1 {
		t.Errorf("%d subagent cards after coming back, want 1", n)
	}
}
