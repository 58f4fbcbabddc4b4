package llmtest_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
)

// Script two responses: a tool call, then the answer. Each request plays
// the next entry.
func ExampleNewModel() {
	m := llmtest.NewModel(
		llmtest.CallTool("call_1", "get_weather", `{"city":"Paris"}`),
		llmtest.Reply("It is sunny in Paris."),
	)
	req := &llm.Request{Model: "claude-sonnet-4-5", Messages: []llm.Message{llm.UserText("Weather in Paris?")}}
	for range 3 {
		res, err := llm.Collect(m.Stream(context.Background(), req))
		if err != nil {
			fmt.Println("error:", strings.SplitN(err.Error(), ";", 2)[0])
			continue
		}
		fmt.Printf("%s: %d calls, %q\n", res.Finish, len(res.Message.ToolCalls()), res.Message.Text())
	}
	fmt.Println("calls:", m.Calls())
	// Output:
	// tool-calls: 1 calls, ""
	// stop: 0 calls, "It is sunny in Paris."
	// error: llmtest: script exhausted: call 3 has no entry
	// calls: 3
}

// Decide the response from the request, here by echoing the last message.
func ExampleRespond() {
	m := llmtest.NewModel(llmtest.Respond(func(req *llm.Request) llmtest.Entry {
		last := req.Messages[len(req.Messages)-1]
		return llmtest.Reply("You said: " + last.Text())
	}))
	req := &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("hello")}}
	res, _ := llm.Collect(m.Stream(context.Background(), req))
	fmt.Println(res.Message.Text())
	// Output: You said: hello
}

// Script provider failures the way an adapter reports them; a retry loop
// under test sees exactly this.
func ExampleFail() {
	m := llmtest.NewModel(
		llmtest.Fail(&llm.ProviderError{Kind: llm.ErrOverloaded, Provider: "anthropic", StatusCode: 529, RetryAfter: time.Second}),
		llmtest.Reply("Recovered."),
	)
	req := &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("hi")}}
	for {
		res, err := llm.Collect(m.Stream(context.Background(), req))
		if llm.IsRetryable(err) {
			fmt.Println("retrying after:", err)
			continue
		}
		fmt.Println(res.Message.Text())
		break
	}
	// Output:
	// retrying after: anthropic: overloaded (HTTP 529)
	// Recovered.
}

// Serve a script over the Anthropic Messages wire. A real program points
// its provider adapter's base URL at srv.URL; here a bare HTTP request
// shows the events.
func ExampleNewServer() {
	// In a test, pass the test's t and the server closes itself.
	srv := llmtest.NewServer(nil, llmtest.NewModel(llmtest.Reply("Hi!")))
	defer srv.Close()

	body := `{"model":"claude-sonnet-4-5","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"Hello"}]}`
	resp, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader(body))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	fmt.Println(resp.Status)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if name, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			fmt.Println(name)
		}
	}
	// Output:
	// 200 OK
	// message_start
	// content_block_start
	// content_block_delta
	// content_block_stop
	// message_delta
	// message_stop
}
