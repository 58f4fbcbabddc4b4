package mcp

import (
	"time"

	"github.com/reinhq/rein/llm"
)

// Event is a lifecycle event of a Manager, delivered to Options.Events.
// It is one of *Connected, *BootstrapEnd, *Disconnected, *ToolsChanged,
// *ToolBefore, *ToolAfter, *ToolError, *Elicited, *Sampled and *Closed.
type Event interface {
	// Kind is the event's name: "mcp:connect", "mcp:bootstrap:end", …
	Kind() string
	// ServerName is the server the event is about.
	ServerName() string
	isEvent()
}

// Connected says a server's client is live: transport up and handshake done.
type Connected struct {
	Server    string
	Transport string
	Protocol  string   // the negotiated protocol version
	Tools     []string // the rein names of the tools offered
	// Lazy is set when the connection was deferred to the first call.
	Lazy bool
	// Reconnect is set when a dropped connection came back.
	Reconnect bool
	Duration  time.Duration
}

// BootstrapEnd ends one server's bootstrap attempt.
type BootstrapEnd struct {
	Server    string
	Transport string
	Duration  time.Duration
	OK        bool
	ToolCount int
	// Lazy: the tools came from the cache and no connection was opened.
	Lazy bool
	// Cached: the tool list came from ServerConfig.CachedTools.
	Cached   bool
	Warnings []string
	Err      error // set when OK is false
}

// Disconnected says a live connection dropped; a reconnect follows.
type Disconnected struct {
	Server string
	Err    error
}

// ToolsChanged says a server's tool list changed (tools/list_changed or a
// reconnect); Manager.Set holds the new tools.
type ToolsChanged struct {
	Server string
	Tools  []string // rein names, after filtering
}

// ToolBefore is sent before a tool call goes to the server.
type ToolBefore struct {
	Server  string
	Tool    string // the server's name for the tool
	Name    string // rein's name for the tool
	CallID  string
	Session string
}

// ToolAfter is sent when a tool call returned a result (possibly an error
// result the server reported).
type ToolAfter struct {
	ToolBefore
	Duration    time.Duration
	IsError     bool
	OutputBytes int
}

// ToolError is sent when a tool call failed without a result: transport
// failure, protocol error, timeout, cancellation.
type ToolError struct {
	ToolBefore
	Duration time.Duration
	Err      error
}

// Closed says a server's connection was closed by the Manager.
type Closed struct {
	Server string
}

// Kind returns "mcp:connect".
func (*Connected) Kind() string { return "mcp:connect" }

// Kind returns "mcp:bootstrap:end".
func (*BootstrapEnd) Kind() string { return "mcp:bootstrap:end" }

// Kind returns "mcp:disconnect".
func (*Disconnected) Kind() string { return "mcp:disconnect" }

// Kind returns "mcp:tools:changed".
func (*ToolsChanged) Kind() string { return "mcp:tools:changed" }

// Kind returns "mcp:tool:before".
func (*ToolBefore) Kind() string { return "mcp:tool:before" }

// Kind returns "mcp:tool:after".
func (*ToolAfter) Kind() string { return "mcp:tool:after" }

// Kind returns "mcp:tool:error".
func (*ToolError) Kind() string { return "mcp:tool:error" }

// Kind returns "mcp:close".
func (*Closed) Kind() string { return "mcp:close" }

// ServerName returns the server's name.
func (e *Connected) ServerName() string { return e.Server }

// ServerName returns the server's name.
func (e *BootstrapEnd) ServerName() string { return e.Server }

// ServerName returns the server's name.
func (e *Disconnected) ServerName() string { return e.Server }

// ServerName returns the server's name.
func (e *ToolsChanged) ServerName() string { return e.Server }

// ServerName returns the server's name.
func (e *ToolBefore) ServerName() string { return e.Server }

// ServerName returns the server's name.
func (e *Closed) ServerName() string { return e.Server }

func (*Connected) isEvent()    {}
func (*BootstrapEnd) isEvent() {}
func (*Disconnected) isEvent() {}
func (*ToolsChanged) isEvent() {}
func (*ToolBefore) isEvent()   {}
func (*ToolAfter) isEvent()    {}
func (*ToolError) isEvent()    {}
func (*Closed) isEvent()       {}

// Elicited says a server asked the person using the host for input, and
// what they chose. The values of an accepted form are not recorded.
type Elicited struct {
	Server   string
	Mode     string   // ElicitForm or ElicitURL
	Message  string   // the server's explanation
	Fields   []string // a form's field names
	URL      string   // a URL-mode request's page
	Action   string   // ElicitAccept, ElicitDecline or ElicitCancel; empty with Err
	Reason   string   // the host's reason for the choice, if it gave one
	Duration time.Duration
	Err      error // the handler failed or its answer did not match the form
}

// Sampled says a server asked the host's model for a completion: the
// request, whether it was approved, and what it cost.
type Sampled struct {
	Server    string
	Model     string
	System    string
	Prompt    []string // "role: text" per message
	Messages  int
	MaxTokens int
	Approved  bool
	Usage     llm.Usage
	Cost      float64 // USD, when SamplingOptions.Cost prices it
	Finish    string
	Duration  time.Duration
	Err       error
}

// Kind returns "mcp:elicit".
func (*Elicited) Kind() string { return "mcp:elicit" }

// Kind returns "mcp:sample".
func (*Sampled) Kind() string { return "mcp:sample" }

// ServerName returns the server's name.
func (e *Elicited) ServerName() string { return e.Server }

// ServerName returns the server's name.
func (e *Sampled) ServerName() string { return e.Server }

func (*Elicited) isEvent() {}
func (*Sampled) isEvent()  {}
