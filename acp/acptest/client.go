// Package acptest is a scripted editor for testing ACP agents: a Client
// that records every session/update as a compact trace and answers
// permission requests from a script.
//
// Quick start:
//
//	c := acptest.NewClient(acp.OptionAllowOnce, acp.OptionReject)
//	conn := sdk.NewClientSideConnection(c, agentStdin, agentStdout)
//	... conn.Initialize, conn.NewSession, conn.Prompt ...
//	c.Trace() // ["tool_call c1 edit pending \"Write a.txt\"", "permission c1 allow-once", ...]
//
// Permission requests wait until the tool call they name has been
// announced by a session/update, so a trace shows the order an editor
// relies on, whatever order the SDK dispatches them in.
package acptest

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// announceWait bounds how long a permission request waits for its tool
// call's announcement before the client records the lapse.
const announceWait = 5 * time.Second

// Client is a scripted ACP client. It is safe for concurrent use.
type Client struct {
	terminals *terminals // nil: terminal requests answer method not found
	files     *files     // nil: file requests answer method not found

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every record
	answers  []string
	trace    []string
	updates  []sdk.SessionNotification
	seen     map[sdk.ToolCallId]bool
	lastText string // the kind of the last trace line, to merge chunks
}

// NewClient returns a client that answers permission requests with the
// given option ids in order, then with a cancelled outcome.
func NewClient(answers ...string) *Client {
	return &Client{changed: make(chan struct{}), answers: answers, seen: map[sdk.ToolCallId]bool{}}
}

// Trace returns what the client saw, one line an update: consecutive
// message or thought chunks are merged into one line.
func (c *Client) Trace() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.trace...)
}

// Updates returns every notification received, in order.
func (c *Client) Updates() []sdk.SessionNotification {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sdk.SessionNotification(nil), c.updates...)
}

// Reset forgets the trace and updates received so far.
func (c *Client) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trace, c.updates, c.lastText = nil, nil, ""
}

// WaitFor blocks until an update received so far satisfies ok, or ctx is
// done.
func (c *Client) WaitFor(ctx context.Context, ok func(sdk.SessionUpdate) bool) error {
	for {
		c.mu.Lock()
		for _, n := range c.updates {
			if ok(n.Update) {
				c.mu.Unlock()
				return nil
			}
		}
		ch := c.changed
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("acptest: no such update yet: %w", ctx.Err())
		}
	}
}

// record appends a trace line; merge joins it to the last line of the
// same kind (text chunks).
func (c *Client) record(kind, line string, merge bool) {
	if merge && c.lastText == kind && len(c.trace) > 0 {
		c.trace[len(c.trace)-1] += line
	} else {
		c.trace = append(c.trace, kind+line)
	}
	c.lastText = ""
	if merge {
		c.lastText = kind
	}
	close(c.changed)
	c.changed = make(chan struct{})
}

// SessionUpdate records an update.
func (c *Client) SessionUpdate(ctx context.Context, n sdk.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates = append(c.updates, n)
	u := n.Update
	switch {
	case u.AgentMessageChunk != nil:
		c.record("agent: ", blockText(u.AgentMessageChunk.Content), true)
	case u.AgentThoughtChunk != nil:
		c.record("thought: ", blockText(u.AgentThoughtChunk.Content), true)
	case u.UserMessageChunk != nil:
		c.record("user: ", blockText(u.UserMessageChunk.Content), true)
	case u.ToolCall != nil:
		tc := u.ToolCall
		c.seen[tc.ToolCallId] = true
		line := fmt.Sprintf("%s %s %s %q", tc.ToolCallId, tc.Kind, tc.Status, tc.Title)
		for _, l := range tc.Locations {
			line += " @" + l.Path
		}
		c.record("tool_call ", line, false)
	case u.ToolCallUpdate != nil:
		tu := u.ToolCallUpdate
		line := string(tu.ToolCallId)
		if tu.Status != nil {
			line += " " + string(*tu.Status)
		}
		for _, ct := range tu.Content {
			switch {
			case ct.Diff != nil:
				old := "<new>"
				if ct.Diff.OldText != nil {
					old = fmt.Sprintf("%q", *ct.Diff.OldText)
				}
				line += fmt.Sprintf(" diff %s %s→%q", ct.Diff.Path, old, ct.Diff.NewText)
			case ct.Content != nil:
				line += fmt.Sprintf(" %q", blockText(ct.Content.Content))
			case ct.Terminal != nil:
				line += " terminal " + ct.Terminal.TerminalId
			}
		}
		c.record("update ", line, false)
	case u.Plan != nil:
		var items []string
		for _, e := range u.Plan.Entries {
			items = append(items, fmt.Sprintf("[%s] %s", e.Status, e.Content))
		}
		c.record("plan ", strings.Join(items, ", "), false)
	default:
		c.record("other", "", false)
	}
	return nil
}

func blockText(b sdk.ContentBlock) string {
	if b.Text != nil {
		return b.Text.Text
	}
	return "<non-text>"
}

// RequestPermission waits for the call's announcement, then answers with
// the next scripted option.
func (c *Client) RequestPermission(ctx context.Context, p sdk.RequestPermissionRequest) (sdk.RequestPermissionResponse, error) {
	id := p.ToolCall.ToolCallId
	announced := c.waitAnnounced(ctx, id)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !announced {
		c.record("permission ", string(id)+" before its tool_call", false)
	}
	if len(c.answers) == 0 {
		c.record("permission ", string(id)+" cancelled", false)
		return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeCancelled()}, nil
	}
	a := c.answers[0]
	c.answers = c.answers[1:]
	c.record("permission ", string(id)+" "+a, false)
	return sdk.RequestPermissionResponse{Outcome: sdk.NewRequestPermissionOutcomeSelected(sdk.PermissionOptionId(a))}, nil
}

// waitAnnounced waits until a tool_call for id was received; false when
// none came in time.
func (c *Client) waitAnnounced(ctx context.Context, id sdk.ToolCallId) bool {
	ctx, cancel := context.WithTimeout(ctx, announceWait)
	defer cancel()
	for {
		c.mu.Lock()
		ok, ch := c.seen[id], c.changed
		c.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

var _ sdk.Client = (*Client)(nil)
