package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/serve"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

func TestNewRefusesMissingOptions(t *testing.T) {
	st := session.NewMemStore()
	defer st.Close()
	mk := func(ctx context.Context, req *serve.SessionRequest) (*serve.Handle, error) { return nil, nil }
	for name, tc := range map[string]struct {
		opts *serve.Options
		want error
	}{
		"nil":      {nil, serve.ErrNoStore},
		"no agent": {&serve.Options{Store: st, Token: "x"}, serve.ErrNoAgent},
		"no token": {&serve.Options{Store: st, NewAgent: mk}, serve.ErrNoToken},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := serve.New(tc.opts); err != tc.want {
				t.Fatalf("New: %v, want %v", err, tc.want)
			}
		})
	}
}

func TestAuthRefusedWithoutToken(t *testing.T) {
	f := newFixture(t, nil)
	for name, header := range map[string]string{
		"none":   "",
		"wrong":  "Bearer nope",
		"basic":  "Basic " + testToken,
		"prefix": "Bearer " + testToken[:4],
	} {
		t.Run(name, func(t *testing.T) {
			for _, route := range []string{"GET /v1/sessions", "POST /v1/sessions", "GET /v1/sessions/x/events", "POST /v1/sessions/x/approvals/c", "DELETE /v1/sessions/x"} {
				method, path, _ := strings.Cut(route, " ")
				req, _ := http.NewRequest(method, f.ts.URL+path, nil)
				if header != "" {
					req.Header.Set("Authorization", header)
				}
				resp, err := f.ts.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				var e struct {
					Error struct{ Code, Message string }
				}
				json.NewDecoder(resp.Body).Decode(&e)
				resp.Body.Close()
				if resp.StatusCode != http.StatusUnauthorized || e.Error.Code != "unauthorized" || !strings.Contains(e.Error.Message, "Authorization: Bearer") {
					t.Errorf("%s: %d %+v, want 401 unauthorized saying how to send the token", route, resp.StatusCode, e.Error)
				}
			}
		})
	}
	// The page's assets are public; they hold no secret.
	resp, err := http.Get(f.ts.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /: %d, want 200", resp.StatusCode)
	}
}

func TestSessionsCRUD(t *testing.T) {
	f := newFixture(t, nil, llmtest.Reply("one"), llmtest.Reply("two"))
	if err := os.Mkdir(filepath.Join(f.root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	var created serve.Session
	f.want(http.StatusCreated, "POST", "/v1/sessions", `{"model":"anthropic/claude-sonnet-4-5","tools":["read"],"cwd":"sub","limits":{"max_steps":3}}`, &created)
	if created.Cwd != filepath.Join(f.root, "sub") || created.Model != "anthropic/claude-sonnet-4-5" || created.Running {
		t.Errorf("created %+v", created)
	}
	second := f.create("")
	f.want(http.StatusAccepted, "POST", "/v1/sessions/"+string(second)+"/turns", `{"prompt":"Title me\nnot this line"}`, nil)
	f.waitIdle(second)

	var page serve.SessionList
	f.want(http.StatusOK, "GET", "/v1/sessions?limit=1", "", &page)
	if len(page.Sessions) != 1 || page.Sessions[0].ID != second || page.Sessions[0].Title != "Title me" || page.Next == "" {
		t.Fatalf("first page %+v, want the newest session titled by its prompt and a cursor", page)
	}
	var rest serve.SessionList
	f.want(http.StatusOK, "GET", "/v1/sessions?limit=1&cursor="+page.Next, "", &rest)
	if len(rest.Sessions) != 1 || rest.Sessions[0].ID != created.ID || rest.Next != "" {
		t.Fatalf("second page %+v, want the older session and no cursor", rest)
	}

	var got serve.Session
	f.want(http.StatusOK, "GET", "/v1/sessions/"+string(created.ID), "", &got)
	if got.ID != created.ID {
		t.Errorf("get %+v", got)
	}
	f.want(http.StatusNoContent, "DELETE", "/v1/sessions/"+string(created.ID), "", nil)
	for _, route := range []string{"GET /v1/sessions/" + string(created.ID), "DELETE /v1/sessions/" + string(created.ID), "POST /v1/sessions/" + string(created.ID) + "/turns"} {
		method, path, _ := strings.Cut(route, " ")
		status, b := f.do(method, path, `{"prompt":"x"}`)
		if status != http.StatusNotFound || errorCode(t, b) != "session_not_found" {
			t.Errorf("%s after delete: %d %s", route, status, b)
		}
	}
}

func TestBadRequests(t *testing.T) {
	f := newFixture(t, nil)
	id := f.create("")
	outside := t.TempDir()
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"unknown field", "POST", "/v1/sessions", `{"modle":"x"}`, 400, "bad_json"},
		{"cwd outside", "POST", "/v1/sessions", `{"cwd":"` + outside + `"}`, 400, "bad_cwd"},
		{"cwd dotdot", "POST", "/v1/sessions", `{"cwd":"../"}`, 400, "bad_cwd"},
		{"cwd missing", "POST", "/v1/sessions", `{"cwd":"nope"}`, 400, "bad_cwd"},
		{"negative limit", "POST", "/v1/sessions", `{"limits":{"max_steps":-1}}`, 400, "bad_limits"},
		{"bad limit", "GET", "/v1/sessions?limit=0", ``, 400, "bad_limit"},
		{"bad cursor", "GET", "/v1/sessions?cursor=!!!", ``, 400, "bad_cursor"},
		{"empty prompt", "POST", "/v1/sessions/" + string(id) + "/turns", `{"prompt":"  "}`, 400, "empty_prompt"},
		{"no body", "POST", "/v1/sessions/" + string(id) + "/turns", ``, 400, "bad_json"},
		{"bad decision", "POST", "/v1/sessions/" + string(id) + "/approvals/c1", `{"decision":"maybe"}`, 400, "bad_decision"},
		{"not waiting", "POST", "/v1/sessions/" + string(id) + "/approvals/c1", `{"decision":"allow"}`, 404, "not_waiting"},
		{"steer idle", "POST", "/v1/sessions/" + string(id) + "/steer", `{"message":"hi"}`, 409, "no_turn_running"},
		{"follow-up idle", "POST", "/v1/sessions/" + string(id) + "/follow-up", `{"message":"hi"}`, 409, "no_turn_running"},
		{"cancel idle", "POST", "/v1/sessions/" + string(id) + "/cancel", ``, 409, "no_turn_running"},
		{"cancel tool idle", "POST", "/v1/sessions/" + string(id) + "/tools/c1/cancel", ``, 409, "no_turn_running"},
		{"bad seq", "GET", "/v1/sessions/" + string(id) + "/events?after=x", ``, 400, "bad_seq"},
		{"bad format", "GET", "/v1/sessions/" + string(id) + "/export?format=pdf", ``, 400, "bad_format"},
		{"no markdown", "GET", "/v1/sessions/" + string(id) + "/export?format=markdown", ``, 501, "no_markdown"},
		{"bad id", "GET", "/v1/sessions/..x", ``, 404, "session_not_found"},
		{"no route", "GET", "/v1/nothing", ``, 404, "not_found"},
		{"wrong method", "PUT", "/v1/sessions", ``, 405, "method_not_allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, b := f.do(tc.method, tc.path, tc.body)
			if status != tc.status || errorCode(t, b) != tc.code {
				t.Errorf("%d %s, want %d %s", status, b, tc.status, tc.code)
			}
		})
	}
}

func TestSecondTurnConflicts(t *testing.T) {
	f := newFixture(t, nil, llmtest.Hang())
	id := f.create("")
	var started serve.TurnStarted
	f.want(http.StatusAccepted, "POST", "/v1/sessions/"+string(id)+"/turns", `{"prompt":"go"}`, &started)
	status, b := f.do("POST", "/v1/sessions/"+string(id)+"/turns", `{"prompt":"again"}`)
	if status != http.StatusConflict || errorCode(t, b) != "turn_running" {
		t.Fatalf("second turn: %d %s, want 409 turn_running", status, b)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := f.openSSE(ctx, id, "")
	defer s.Close()
	s.until(t, session.TypeStepStart)
	f.want(http.StatusAccepted, "POST", "/v1/sessions/"+string(id)+"/cancel", "", nil)
	evs := s.until(t, session.TypeTurnEnd)
	var end session.TurnEnd
	json.Unmarshal(evs[len(evs)-1].Data, &end)
	if end.Reason != session.EndAborted || end.Cause != "user" {
		t.Errorf("turn end %+v, want aborted by the user", end)
	}
	f.waitIdle(id)
	status, b = f.do("POST", "/v1/sessions/"+string(id)+"/cancel", "")
	if status != http.StatusConflict || errorCode(t, b) != "no_turn_running" {
		t.Errorf("cancel when idle: %d %s", status, b)
	}
}

func TestSteerAndFollowUpRoundTrip(t *testing.T) {
	b := newBlocker()
	var sawSteer, sawFollowUp bool
	f := newFixture(t, &fixtureOptions{tools: []tool.Tool{b.tool()}},
		llmtest.CallTool("c1", "wait", `{}`),
		llmtest.Respond(func(req *llm.Request) llmtest.Entry {
			sawSteer = strings.Contains(lastUserText(req), "also check the docs")
			return llmtest.Reply("checked")
		}),
		llmtest.Respond(func(req *llm.Request) llmtest.Entry {
			sawFollowUp = strings.Contains(lastUserText(req), "then summarise")
			return llmtest.Reply("summary")
		}),
	)
	id := f.create("")
	f.want(http.StatusAccepted, "POST", "/v1/sessions/"+string(id)+"/turns", `{"prompt":"work"}`, nil)
	<-b.started
	f.want(http.StatusAccepted, "POST", "/v1/sessions/"+string(id)+"/steer", `{"message":"also check the docs"}`, nil)
	f.want(http.StatusAccepted, "POST", "/v1/sessions/"+string(id)+"/follow-up", `{"message":"then summarise"}`, nil)
	close(b.release)
	f.waitIdle(id)
	if !sawSteer || !sawFollowUp {
		t.Fatalf("the model saw the steer: %v, the follow-up: %v", sawSteer, sawFollowUp)
	}
	var types []string
	for _, ev := range f.events(id) {
		switch d := ev.Data.(type) {
		case *session.SteeringMessage:
			types = append(types, "steer:"+d.Source)
		case *session.UserMessage:
			types = append(types, "user:"+d.Source)
		}
	}
	if diff := cmp.Diff([]string{"user:user", "steer:steer", "user:follow-up"}, types); diff != "" {
		t.Errorf("messages on the log (-want +got):\n%s", diff)
	}
}

func lastUserText(req *llm.Request) string {
	m := req.Messages[len(req.Messages)-1]
	var sb strings.Builder
	for _, p := range m.Parts {
		if tx, ok := p.(*llm.Text); ok {
			sb.WriteString(tx.Text)
		}
	}
	return sb.String()
}

func TestCancelTool(t *testing.T) {
	b := newBlocker()
	f := newFixture(t, &fixtureOptions{tools: []tool.Tool{b.tool()}},
		llmtest.CallTool("c1", "wait", `{}`), llmtest.Reply("fine"))
	id := f.create("")
	f.want(http.StatusAccepted, "POST", "/v1/sessions/"+string(id)+"/turns", `{"prompt":"work"}`, nil)
	<-b.started
	f.want(http.StatusAccepted, "POST", "/v1/sessions/"+string(id)+"/tools/c1/cancel", `{"reason":"too slow"}`, nil)
	f.waitIdle(id)
	var res *session.ToolResult
	for _, ev := range f.events(id) {
		if r, ok := ev.Data.(*session.ToolResult); ok {
			res = r
		}
	}
	if res == nil || res.Outcome != session.OutcomeCancelled || !res.IsError {
		t.Fatalf("tool result %+v, want a cancelled error", res)
	}
}

func TestApprovalRoundTrip(t *testing.T) {
	write := func(id, path string) llmtest.Entry {
		return llmtest.CallTool(id, "write", `{"path":"`+path+`","content":"hi\n"}`)
	}
	f := newFixture(t, nil,
		write("w1", "a.txt"), llmtest.Reply("wrote a"),
		write("w2", "b.txt"), llmtest.Reply("denied b"),
		write("w3", "c.txt"), write("w4", "d.txt"), llmtest.Reply("wrote c and d"),
	)
	id := f.create("")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := f.openSSE(ctx, id, "")
	defer s.Close()
	turn := func(prompt, decision string, asks int) {
		t.Helper()
		f.want(http.StatusAccepted, "POST", "/v1/sessions/"+string(id)+"/turns", `{"prompt":"`+prompt+`"}`, nil)
		for range asks {
			evs := s.until(t, serve.TypeApprovalRequest)
			var w serve.Waiting
			json.Unmarshal(evs[len(evs)-1].Data, &w)
			var view serve.Session
			f.want(http.StatusOK, "GET", "/v1/sessions/"+string(id), "", &view)
			if len(view.Waiting) != 1 || view.Waiting[0].CallID != w.CallID || w.Tool != "write" || w.Path == "" {
				t.Fatalf("waiting %+v, session shows %+v", w, view.Waiting)
			}
			f.want(http.StatusOK, "POST", "/v1/sessions/"+string(id)+"/approvals/"+string(w.CallID), `{"decision":"`+decision+`"}`, nil)
		}
		s.until(t, session.TypeTurnEnd)
	}
	turn("write a", "allow", 1)
	turn("write b", "deny", 1)
	turn("write c and d", "always", 1) // d is covered by the remembered rule
	for name, want := range map[string]bool{"a.txt": true, "b.txt": false, "c.txt": true, "d.txt": true} {
		if _, err := os.Stat(filepath.Join(f.root, name)); (err == nil) != want {
			t.Errorf("%s written: %v, want %v", name, err == nil, want)
		}
	}
	codes := map[llm.CallID]string{}
	for _, ev := range f.events(id) {
		if r, ok := ev.Data.(*session.ToolResult); ok {
			codes[r.CallID] = r.Outcome + "/" + r.Code
		}
	}
	want := map[llm.CallID]string{"w1": "execute/", "w2": "gate-block/" + agent.CodeApprovalDenied, "w3": "execute/", "w4": "execute/"}
	if diff := cmp.Diff(want, codes); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}

func TestReconnectSeesWaitingApproval(t *testing.T) {
	f := newFixture(t, nil, llmtest.CallTool("w1", "write", `{"path":"a.txt","content":"x"}`), llmtest.Reply("ok"))
	id := f.create("")
	f.want(http.StatusAccepted, "POST", "/v1/sessions/"+string(id)+"/turns", `{"prompt":"w"}`, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := f.openSSE(ctx, id, "")
	s.until(t, serve.TypeApprovalRequest)
	s.Close()
	// A client that connects while the call waits is told about it.
	s = f.openSSE(ctx, id, "")
	defer s.Close()
	evs := s.until(t, serve.TypeApprovalRequest)
	if evs[len(evs)-1].Seq != 0 {
		t.Fatal("an approval request must be transient")
	}
	f.want(http.StatusOK, "POST", "/v1/sessions/"+string(id)+"/approvals/w1", `{"decision":"allow"}`, nil)
	s.until(t, session.TypeTurnEnd)
}

func TestExportAndSummary(t *testing.T) {
	f := newFixture(t, &fixtureOptions{markdown: true}, llmtest.Reply("hello").WithUsage(llm.Usage{Input: 1000, Output: 100, CacheRead: 3000}))
	id := f.create("")
	f.want(http.StatusAccepted, "POST", "/v1/sessions/"+string(id)+"/turns", `{"prompt":"hi"}`, nil)
	f.waitIdle(id)
	events := f.events(id)

	var want strings.Builder
	session.Export(context.Background(), f.store, id, &want)
	got := f.want(http.StatusOK, "GET", "/v1/sessions/"+string(id)+"/export", "", nil)
	if diff := cmp.Diff(want.String(), string(got)); diff != "" {
		t.Errorf("NDJSON export (-want +got):\n%s", diff)
	}
	md := f.want(http.StatusOK, "GET", "/v1/sessions/"+string(id)+"/export?format=markdown", "", nil)
	if lines := strings.Count(string(md), "\n"); lines != len(events) || !strings.Contains(string(md), "- assistant.message") {
		t.Errorf("markdown export %q: want the host's renderer over all %d events", md, len(events))
	}
	ndjson := f.want(http.StatusOK, "GET", "/v1/sessions/"+string(id)+"/events?format=ndjson&after=2", "", nil)
	lines := strings.Split(strings.TrimSpace(string(ndjson)), "\n")
	if len(lines) != len(events)-2 {
		t.Fatalf("ndjson after=2: %d lines, want %d", len(lines), len(events)-2)
	}
	for i, line := range lines {
		ev, err := session.DecodeEvent([]byte(line))
		if err != nil || ev.Seq != int64(i+3) {
			t.Fatalf("line %d: %v seq %d, want seq %d", i, err, ev.Seq, i+3)
		}
	}
	var sum agent.RunSummary
	f.want(http.StatusOK, "GET", "/v1/sessions/"+string(id)+"/summary", "", &sum)
	wantSum := agent.Summarize(events)
	wantSum.Session = id
	if sum.Turns != 1 || sum.Usage.CacheRead != 3000 || sum.Cost <= 0 || sum.ByModel["claude-sonnet-4-5"].Cost != sum.Cost {
		t.Errorf("summary %+v, want one turn priced by model", sum)
	}
	if diff := cmp.Diff(wantSum.Usage, sum.Usage); diff != "" {
		t.Errorf("summary usage (-want +got):\n%s", diff)
	}
}

func TestDeleteEndsStreams(t *testing.T) {
	f := newFixture(t, nil, llmtest.Reply("hi"))
	id := f.create("")
	f.want(http.StatusAccepted, "POST", "/v1/sessions/"+string(id)+"/turns", `{"prompt":"x"}`, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := f.openSSE(ctx, id, "")
	defer s.Close()
	s.until(t, session.TypeTurnEnd)
	f.want(http.StatusNoContent, "DELETE", "/v1/sessions/"+string(id), "", nil)
	if fr, err := s.next(); err == nil {
		t.Fatalf("after the delete the stream sent %q, want it to end", fr.data)
	}
	status, b := f.do("GET", "/v1/sessions/"+string(id)+"/events", "")
	if status != http.StatusNotFound || errorCode(t, b) != "session_not_found" {
		t.Errorf("events of a deleted session: %d %s", status, b)
	}
}

func TestManySessionsAtOnce(t *testing.T) {
	const n = 20
	b := newBlocker()
	var entries []llmtest.Entry
	for i := range n {
		entries = append(entries, llmtest.CallTool("c"+strconv.Itoa(i), "wait", `{}`))
	}
	for range n {
		entries = append(entries, llmtest.Reply("done"))
	}
	f := newFixture(t, &fixtureOptions{tools: []tool.Tool{b.tool()}}, entries...)
	ids := make([]session.ID, n)
	for i := range ids {
		ids[i] = f.create("")
		f.want(http.StatusAccepted, "POST", "/v1/sessions/"+string(ids[i])+"/turns", `{"prompt":"go"}`, nil)
	}
	// Every session's turn is in flight at once: each holds a tool call.
	for range n {
		<-b.started
	}
	var list serve.SessionList
	f.want(http.StatusOK, "GET", "/v1/sessions", "", &list)
	running := 0
	for _, s := range list.Sessions {
		if s.Running {
			running++
		}
	}
	if running != n {
		t.Errorf("%d sessions running, want %d", running, n)
	}
	close(b.release)
	for _, id := range ids {
		f.waitIdle(id)
		evs := f.events(id)
		if end, ok := evs[len(evs)-1].Data.(*session.TurnEnd); !ok || end.Reason != session.EndCompleted {
			t.Errorf("session %s ended with %+v", id, evs[len(evs)-1].Data)
		}
	}
}

func TestNDJSONFollow(t *testing.T) {
	b := newBlocker()
	f := newFixture(t, &fixtureOptions{tools: []tool.Tool{b.tool()}}, llmtest.CallTool("c1", "wait", `{}`), llmtest.Reply("done"))
	id := f.create("")
	var started serve.TurnStarted
	f.want(http.StatusAccepted, "POST", "/v1/sessions/"+string(id)+"/turns", `{"prompt":"go"}`, &started)
	<-b.started
	req, _ := http.NewRequest("GET", f.ts.URL+started.Events+"&follow=1", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Accept", "application/x-ndjson")
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	close(b.release) // the rest of the turn arrives while the client follows
	dec := json.NewDecoder(resp.Body)
	want := started.After + 1
	for {
		var ev wireEvent
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("after seq %d: %v", want-1, err)
		}
		if ev.Seq != want {
			t.Fatalf("seq %d, want %d", ev.Seq, want)
		}
		want++
		if ev.Type == session.TypeTurnEnd {
			break
		}
	}
}
