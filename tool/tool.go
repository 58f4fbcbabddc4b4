package tool

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/reinhq/rein/llm"
)

// Annotations describe what a tool does to the world. They drive dry-run,
// approval and parallel scheduling; a tool with none is treated with the
// most caution.
type Annotations struct {
	ReadOnly    bool `json:"read_only,omitempty"`   // changes nothing
	Destructive bool `json:"destructive,omitempty"` // may delete or overwrite
	Idempotent  bool `json:"idempotent,omitempty"`  // repeating it changes nothing more
	OpenWorld   bool `json:"open_world,omitempty"`  // reaches outside the workspace (network, …)
}

// Spec describes a tool to the model and to the loop.
type Spec struct {
	Name        string
	Description string
	Schema      json.RawMessage // a JSON Schema object for the arguments
	Annotations *Annotations    // nil: unannotated
	// Exclusive tools run alone: they wait for the calls before them in a
	// batch and hold back the calls after them.
	Exclusive bool
}

// Call is one invocation of a tool.
type Call struct {
	ID      llm.CallID
	Name    string          // the name the tool is registered under
	Args    json.RawMessage // validated against the tool's schema
	Session string          // the session's id, for tools that keep per-session state
	// Progress reports progress to the host; never sent to the model.
	// Never nil when the tool is called through Run (as the loop does);
	// a tool called directly must tolerate nil.
	Progress func(Progress)
	// State is the tool's durable key/value state (a *StagedState when
	// the host keeps state); Run commits its writes when the call
	// succeeds and discards them when it fails. Nil when the host keeps
	// no state.
	State State
	// Validated says Args were already validated (and coerced) against
	// this tool's own schema, as the agent loop does before every call,
	// so a tool that validates for itself (tool.New's typed tools) need
	// not do it again. Leave it false when calling a tool directly.
	Validated bool
}

// Progress is one progress report from inside a tool.
type Progress struct {
	Message string
	Done    float64 // fraction done, 0 when unknown
}

// Result is what a tool returns.
type Result struct {
	Parts   []llm.Part     // what the model sees
	IsError bool           // the tool failed in a way the model should know
	Meta    map[string]any // for the host only; never sent to the model
}

// Text returns a result holding one text part.
func Text(s string) *Result { return &Result{Parts: []llm.Part{&llm.Text{Text: s}}} }

// Errorf returns an error result holding one text part.
func Errorf(format string, args ...any) *Result {
	r := Text(fmt.Sprintf(format, args...))
	r.IsError = true
	return r
}

// Tool is the seam to something the model can call.
//
// Call runs the tool with validated arguments. A failure the model should
// see (a missing file, a bad pattern) is a Result with IsError set, or an
// error, which the loop turns into a "Tool error: <message>" result; a
// panic is recovered the same way. Call must honour ctx cancellation and
// must be safe for concurrent use unless the tool is Exclusive.
type Tool interface {
	Spec() Spec
	Call(ctx context.Context, call *Call) (*Result, error)
}

// State is a tool's small durable key/value map.
type State interface {
	Get(key string) (string, bool)
	// Set stages a write, committed when the call settles successfully.
	Set(key, value string)
}
