package llmtest_test

import (
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
)

var requestIDs = regexp.MustCompile(`req_[a-z]+_\d+`)

// A canned stream is byte for byte what Server sends for the same entry,
// request ids aside, and the script repeats.
func TestCannedServerPlaysServerBytes(t *testing.T) {
	entries := []llmtest.Entry{llmtest.CallTool("call_1", "get_weather", `{"city":"Paris"}`), llmtest.Reply("Sunny.")}
	for _, wire := range []struct{ path, body, model string }{
		{"/v1/messages", anthropicBody, "claude-sonnet-4-5"},
		{"/v1/chat/completions", openaiBody, "gpt-5-mini"},
	} {
		canned, err := llmtest.NewCannedServer(t, wire.model, entries...)
		if err != nil {
			t.Fatal(err)
		}
		srv := llmtest.NewServerWithOptions(t, llmtest.NewModel(entries...), &llmtest.ServerOptions{NoCache: true})
		for i := range entries {
			_, _, want := post(t, srv, wire.path, wire.body)
			got := postCanned(t, canned, wire.path, wire.body)
			norm := func(s string) string {
				return unstable.ReplaceAllString(requestIDs.ReplaceAllString(s, "req"), `"created":0`)
			}
			if diff := cmp.Diff(norm(want), norm(got)); diff != "" {
				t.Errorf("%s entry %d (-Server +CannedServer):\n%s", wire.path, i, diff)
			}
		}
		// The script repeats.
		if got := postCanned(t, canned, wire.path, wire.body); !strings.Contains(got, `"call_1"`) {
			t.Errorf("%s: the third request did not replay the first entry", wire.path)
		}
		if diff := cmp.Diff([]int{len(wire.body), len(wire.body), len(wire.body)}, canned.Lengths()); diff != "" {
			t.Errorf("lengths (-want +got):\n%s", diff)
		}
		if got := canned.Lengths(); got != nil {
			t.Errorf("Lengths after Lengths = %v, want none", got)
		}
	}
}

func TestCannedServerRejectsWhatCannotBeCanned(t *testing.T) {
	for name, e := range map[string]llmtest.Entry{
		"fail":    llmtest.Fail(errors.New("boom")),
		"hang":    llmtest.Hang(),
		"cut":     llmtest.Cut(&llm.TextDelta{Text: "partial"}),
		"respond": llmtest.Respond(func(*llm.Request) llmtest.Entry { return llmtest.Reply("x") }),
	} {
		if _, err := llmtest.NewCannedServer(t, "m", e); err == nil {
			t.Errorf("%s: NewCannedServer accepted an entry it cannot can", name)
		}
	}
	if _, err := llmtest.NewCannedServer(t, "m"); err == nil {
		t.Error("NewCannedServer accepted an empty script")
	}
}

func postCanned(t *testing.T, s *llmtest.CannedServer, path, body string) string {
	t.Helper()
	resp, err := s.Client().Post(s.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
