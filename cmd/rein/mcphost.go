package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/mcp"
	"github.com/reinhq/rein/tool"
)

// mcpHost is what a run offers its MCP servers besides tools: the
// workspace as their root, the run's model for completions (behind the
// run's approval policy) and a way to ask the person for input.
type mcpHost struct {
	root   string
	flags  []string
	extra  []mcp.ServerConfig // an editor's servers, which replace those of the same name
	out    io.Writer          // diagnostics
	events func(mcp.Event)
	// model answers servers' completion requests when approve allows
	// them; nil offers no sampling.
	model     llm.Model
	modelName string
	approve   tool.Approver
	// charge adds an answered completion's cost to the run in flight, so
	// --max-cost counts it; nil charges nothing. It is read when a
	// completion ends, so it may be set after the Manager is made.
	charge func(model string, u llm.Usage, cost float64) bool
	// tracer, when set, traces the servers' tool calls.
	tracer trace.TracerProvider
	// meter, when set, records the durations of the servers' tool calls.
	meter metric.MeterProvider
	// elicit asks the person for input; nil declines every request.
	elicit mcp.ElicitFunc
	// openAuth shows an authorization URL to the person, for servers that
	// need an OAuth login now; nil makes them fail asking for 'rein mcp
	// login'.
	openAuth func(ctx context.Context, server, authURL string) error
}

// atTerminal lets servers ask the person at the terminal: for input, and
// for an OAuth login when they need one.
func (h *mcpHost) atTerminal(t *ttyApprover) {
	h.elicit = t.Elicit
	h.openAuth = func(ctx context.Context, server, u string) error {
		fmt.Fprintf(t.out, "\nrein: MCP server %s needs you to log in; open:\n\n  %s\n\n", server, u)
		openBrowser(u)
		return nil
	}
}

// options are the Manager options for h.
func (h *mcpHost) options(servers []mcp.ServerConfig) (*mcp.Options, error) {
	opts := &mcp.Options{Servers: servers, Events: h.observe, Elicit: h.elicit, OpenAuthURL: h.openAuth}
	if opts.Elicit == nil {
		opts.Elicit = declineElicit
	}
	opts.TracerProvider, opts.MeterProvider = h.tracer, h.meter
	if h.root != "" {
		r, err := mcp.DirRoot(h.root)
		if err != nil {
			return nil, err
		}
		opts.Roots = []mcp.Root{r}
	}
	if h.model != nil {
		name := h.modelName
		opts.Sampling = &mcp.SamplingOptions{Model: h.model, ModelName: name, Approve: h.approveSample,
			Cost: func(u llm.Usage) float64 { return catalogCost(name, u) }}
	}
	return opts, nil
}

// observe hands the Manager's events on, charging each answered
// completion to the run first: it reaches the run's budget before the
// tool call that caused it returns.
func (h *mcpHost) observe(ev mcp.Event) {
	if s, ok := ev.(*mcp.Sampled); ok && h.charge != nil && s.Usage != (llm.Usage{}) {
		h.charge(s.Model, s.Usage, s.Cost)
	}
	if h.events != nil {
		h.events(ev)
	}
}

// approveSample puts a server's completion request through the run's
// approval policy, as a call of the pseudo-tool mcp_sampling_SERVER.
func (h *mcpHost) approveSample(ctx context.Context, req *mcp.SampleRequest) (bool, error) {
	if h.approve == nil {
		return false, nil
	}
	first := ""
	if len(req.Request.Messages) > 0 {
		first = req.Request.Messages[len(req.Request.Messages)-1].Text()
	}
	if len(first) > 120 {
		first = first[:120] + "…"
	}
	ap, err := h.approve.Approve(ctx, &tool.ApprovalRequest{
		Tool:    "mcp_sampling_" + req.Server,
		Command: fmt.Sprintf("a completion of up to %d tokens for MCP server %s: %q", req.Request.MaxTokens, req.Server, first),
		Reason:  "an MCP server asks the model for a completion",
	})
	if err != nil {
		return false, err
	}
	return ap.Verdict == tool.Allow, nil
}

// declineElicit answers when no one can be asked: a decline, so the
// server knows the person was not asked and can go on without.
func declineElicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	return &mcp.ElicitResult{Action: mcp.ElicitDecline, Reason: "no terminal to ask on"}, nil
}

// Elicit asks at the terminal for what a server requests: whether to
// answer at all, then each field of a form, or whether to open a URL.
func (t *ttyApprover) Elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	tty, err := os.Open("/dev/tty")
	if err != nil {
		return declineElicit(ctx, req)
	}
	defer tty.Close()
	stop := context.AfterFunc(ctx, func() { tty.Close() }) // ends a read in progress
	defer stop()
	in := bufio.NewReader(tty)
	ask := func(prompt string) (string, error) {
		fmt.Fprint(t.out, prompt)
		line, err := in.ReadString('\n')
		if err != nil && line == "" {
			return "", fmt.Errorf("no answer at the terminal: %w", err)
		}
		return strings.TrimSpace(line), nil
	}
	what := "answer"
	if req.Mode == mcp.ElicitURL {
		what = "open " + req.URL
	}
	fmt.Fprintf(t.out, "\nrein: MCP server %s asks: %s\n", req.Server, req.Message)
	choice, err := ask(fmt.Sprintf("rein: %s? [y]es / [n]o / [c]ancel: ", what))
	if err != nil {
		return &mcp.ElicitResult{Action: mcp.ElicitCancel, Reason: err.Error()}, nil
	}
	switch strings.ToLower(choice) {
	case "y", "yes":
	case "c", "cancel":
		return &mcp.ElicitResult{Action: mcp.ElicitCancel, Reason: "cancelled at the terminal"}, nil
	default:
		return &mcp.ElicitResult{Action: mcp.ElicitDecline, Reason: "declined at the terminal"}, nil
	}
	if req.Mode == mcp.ElicitURL {
		openBrowser(req.URL)
		return &mcp.ElicitResult{Action: mcp.ElicitAccept}, nil
	}
	content := map[string]any{}
	for _, f := range req.Fields {
		v, err := ask(fieldPrompt(f))
		if err != nil {
			return &mcp.ElicitResult{Action: mcp.ElicitCancel, Reason: err.Error()}, nil
		}
		if v == "" {
			continue // the schema's check reports a missing required field
		}
		content[f.Name] = fieldValue(f, v)
	}
	return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: content}, nil
}

// fieldPrompt is the terminal prompt of one form field.
func fieldPrompt(f mcp.ElicitField) string {
	label := f.Title
	if label == "" {
		label = f.Name
	}
	var hints []string
	switch {
	case len(f.Enum) > 0:
		hints = append(hints, "one of "+strings.Join(f.Enum, ", "))
	case f.Type == "boolean":
		hints = append(hints, "y/n")
	case f.Format != "":
		hints = append(hints, f.Format)
	default:
		hints = append(hints, f.Type)
	}
	if f.Type == "array" {
		hints = append(hints, "comma-separated")
	}
	if f.Required {
		hints = append(hints, "required")
	}
	if f.Default != nil {
		hints = append(hints, fmt.Sprintf("default %v", f.Default))
	}
	desc := ""
	if f.Description != "" {
		desc = " — " + f.Description
	}
	return fmt.Sprintf("  %s%s (%s): ", label, desc, strings.Join(hints, ", "))
}

// fieldValue reads a typed answer; numbers stay text, for the schema's
// check to convert.
func fieldValue(f mcp.ElicitField, v string) any {
	switch f.Type {
	case "boolean":
		switch strings.ToLower(v) {
		case "y", "yes", "true":
			return true
		case "n", "no", "false":
			return false
		}
	case "array":
		var items []any
		for _, it := range strings.Split(v, ",") {
			if it = strings.TrimSpace(it); it != "" {
				items = append(items, it)
			}
		}
		return items
	}
	return v
}
