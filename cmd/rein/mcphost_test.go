package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/mcp"
	"github.com/reinhq/rein/mcp/mcptest"
)

// mcpRecords returns the run's mcp.event records of kind.
func mcpRecords(t *testing.T, stdout, kind string) []map[string]any {
	var out []map[string]any
	for _, ev := range eventsOf(parseEvents(t, stdout), "mcp.event") {
		if ev["kind"] == kind {
			detail, _ := ev["detail"].(map[string]any)
			out = append(out, detail)
		}
	}
	return out
}

// Without a terminal, a server's request for input is declined, the
// server hears so, and the decline is on the session log with why.
func TestRunMCPElicitationDeclinedWithoutTerminal(t *testing.T) {
	url := mcptest.ServeHTTP(t, mcptest.NewHostServer(nil))
	e := newEnv(t)
	m := llmtest.NewModel(
		llmtest.CallTool("c1", "mcp_host_form", `{}`),
		llmtest.Reply("Done."),
	)
	srv := llmtest.NewServer(t, m)
	r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--json", "--approve", "auto", "--mcp", "host="+url, "ask me")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	results := eventsOf(parseEvents(t, r.stdout), "tool.result")
	if len(results) != 1 || !strings.Contains(fmt.Sprint(results[0]["parts"]), "decline null") {
		t.Errorf("tool.result = %v, want the server's report of a decline", results)
	}
	recs := mcpRecords(t, r.stdout, "mcp:elicit")
	if len(recs) != 1 || recs[0]["Action"] != mcp.ElicitDecline || recs[0]["Reason"] != "no terminal to ask on" || recs[0]["Message"] != "Who are you?" {
		t.Errorf("mcp:elicit records = %v, want one decline with its reason", recs)
	}
}

// A server's completion request goes to the run's own model when the
// approval policy allows it, with its request and cost on the log; the
// deny policy refuses it before the model sees anything.
func TestRunMCPSamplingApproveDeny(t *testing.T) {
	url := mcptest.ServeHTTP(t, mcptest.NewHostServer(nil))
	for _, approve := range []string{"auto", "deny"} {
		t.Run(approve, func(t *testing.T) {
			e := newEnv(t)
			script := []llmtest.Entry{llmtest.CallTool("c1", "mcp_host_summarise", `{}`)}
			if approve == "auto" {
				script = append(script, llmtest.Reply("All quiet.").WithUsage(llm.Usage{Input: 1000, Output: 100}))
			}
			m := llmtest.NewModel(append(script, llmtest.Reply("Done."))...)
			srv := llmtest.NewServer(t, m)
			r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--json", "--approve", approve, "--mcp", "host="+url, "summarise")...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			results := eventsOf(parseEvents(t, r.stdout), "tool.result")
			recs := mcpRecords(t, r.stdout, "mcp:sample")
			if len(recs) != 1 {
				t.Fatalf("mcp:sample records = %v, want one", recs)
			}
			rec := recs[0]
			if fmt.Sprint(rec["Prompt"]) != "[user: Summarise the logs.]" || rec["System"] != "Be brief." {
				t.Errorf("the record does not hold the request: %v", rec)
			}
			if approve == "auto" {
				if len(results) != 1 || !strings.Contains(fmt.Sprint(results[0]["parts"]), `said "All quiet."`) {
					t.Errorf("tool.result = %v, want the completion", results)
				}
				if rec["Approved"] != true || rec["Cost"] == nil || rec["Cost"].(float64) <= 0 {
					t.Errorf("record = %v, want approved with a cost", rec)
				}
				return
			}
			if len(results) != 1 || results[0]["is_error"] != true || !strings.Contains(fmt.Sprint(results[0]["parts"]), "denied") {
				t.Errorf("tool.result = %v, want a denial", results)
			}
			if rec["Approved"] != false || !strings.Contains(fmt.Sprint(rec["Error"]), "denied") {
				t.Errorf("record = %v, want a denial", rec)
			}
		})
	}
}

// A completion a server asked for counts toward --max-cost: the run stops
// at the next step, before the model is asked again.
func TestRunMCPSamplingCountsTowardMaxCost(t *testing.T) {
	url := mcptest.ServeHTTP(t, mcptest.NewHostServer(nil))
	e := newEnv(t)
	// 40,000 input tokens of claude-sonnet-4-5 at $3 a million: $0.12,
	// against the step's fraction of a cent.
	m := llmtest.NewModel(
		llmtest.CallTool("c1", "mcp_host_summarise", `{}`),
		llmtest.Reply("All quiet.").WithUsage(llm.Usage{Input: 40000}),
		llmtest.Reply("never sent"),
	)
	srv := llmtest.NewServer(t, m)
	r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--approve", "auto", "--max-cost", "0.1", "--mcp", "host="+url, "summarise")...)
	if r.code != exitStopped {
		t.Fatalf("exit %d, want %d (stopped on the budget)\n%s", r.code, exitStopped, r.stderr)
	}
	if !strings.Contains(r.stderr, "raise --max-cost ($0.1") || !strings.Contains(r.stderr, " used of $0.10)") {
		t.Errorf("stderr does not say the budget was spent by the completion:\n%s", r.stderr)
	}
	if n := len(m.Requests()); n != 2 {
		t.Errorf("model requests = %d, want 2 (the step and the completion)", n)
	}
}

// The workspace is the servers' root.
func TestRunMCPRootsAreTheWorkspace(t *testing.T) {
	url := mcptest.ServeHTTP(t, mcptest.NewHostServer(nil))
	e := newEnv(t)
	m := llmtest.NewModel(llmtest.CallTool("c1", "mcp_host_roots", `{}`), llmtest.Reply("Done."))
	srv := llmtest.NewServer(t, m)
	r := e.run(anthropicWire.env(), anthropicWire.args(srv, e, "--json", "--approve", "auto", "--mcp", "host="+url, "roots")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	want, _ := mcp.DirRoot(e.work)
	results := eventsOf(parseEvents(t, r.stdout), "tool.result")
	if len(results) != 1 || !strings.Contains(fmt.Sprint(results[0]["parts"]), want.URI) {
		t.Errorf("tool.result = %v, want %s", results, want.URI)
	}
}
