package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
)

// Events reach a --json reader as they are recorded: the tool call's
// line arrives while the tool still runs, and the result closes the output.
func TestRunJSONIsLive(t *testing.T) {
	e := newEnv(t)
	w := wires[0]
	m := llmtest.NewModel(
		llmtest.CallTool("c1", "shell", `{"command":"sleep 2"}`).WithUsage(llm.Usage{Input: 1000, Output: 100}),
		llmtest.Reply("Slept.").WithUsage(llm.Usage{Input: 2000, Output: 50}),
	)
	srv := llmtest.NewServer(t, m)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := e.cmd(ctx, w.env(), w.args(srv, e, "--json", "--approve", "auto", "sleep a while")...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []map[string]json.RawMessage
	var types []string
	var callAt, resultAt time.Time
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var raw map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		var typ string
		json.Unmarshal(raw["type"], &typ)
		switch typ {
		case "tool.call":
			callAt = time.Now()
		case "tool.result":
			resultAt = time.Now()
		}
		lines = append(lines, raw)
		types = append(types, typ)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("rein: %v\n%s", err, errb.String())
	}
	if callAt.IsZero() || resultAt.IsZero() {
		t.Fatalf("no tool.call or tool.result line: %v", types)
	}
	// The shell sleeps 2s between the two lines: the call's line was
	// written before the tool finished, not with its result.
	if gap := resultAt.Sub(callAt); gap < time.Second {
		t.Errorf("tool.call arrived %s before tool.result, want about 2s: it was held back", gap)
	}
	if !strings.Contains(strings.Join(types, " "), "text.delta") {
		t.Errorf("no text.delta lines: %v", types)
	}
	last := lines[len(lines)-1]
	var res struct {
		Type    string             `json:"type"`
		Session string             `json:"session"`
		End     string             `json:"end"`
		Answer  string             `json:"answer"`
		Steps   int                `json:"steps"`
		Usage   llm.Usage          `json:"usage"`
		Cost    float64            `json:"cost_usd"`
		ByModel map[string]float64 `json:"cost_by_model_usd"`
	}
	b, _ := json.Marshal(last)
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if res.Type != "result" || res.End != "completed" || res.Answer != "Slept." || res.Steps != 2 || res.Session == "" {
		t.Errorf("last line = %s, want the completed result", b)
	}
	if d := cmp.Diff(llm.Usage{Input: 3000, Output: 150}, res.Usage); d != "" {
		t.Errorf("usage (-want +got):\n%s", d)
	}
	// claude-sonnet-4-5: $3 in, $15 out a million tokens.
	want := 3000*3e-6 + 150*15e-6
	if diff := res.Cost - want; diff > 1e-9 || diff < -1e-9 || len(res.ByModel) != 1 {
		t.Errorf("cost = %g by model %v, want %g for one model", res.Cost, res.ByModel, want)
	}
	if !strings.Contains(errb.String(), "session "+res.Session) {
		t.Errorf("the result's session is not the run's:\n%s", errb.String())
	}
}
