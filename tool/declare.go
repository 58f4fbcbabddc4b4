package tool

import "encoding/json"

// Origins a tool may declare, recorded on its calls.
const (
	// OriginNative is rein's own tools and the host's Go tools; a tool
	// that declares nothing is native.
	OriginNative = "native"
	// OriginMCP is a tool served by an MCP server.
	OriginMCP = "mcp"
	// OriginProvider is a tool the model provider runs on its side.
	OriginProvider = "provider"
)

// Originer is implemented by tools that say where they come from, for
// hosts to record on each call (one of the Origin constants, or another
// short word). Hosts read it with OriginOf.
type Originer interface {
	Origin() string
}

// OriginOf returns the origin t declares, itself or under its wrappers
// (found with As), or OriginNative when it declares none (or "").
func OriginOf(t Tool) string {
	if o, ok := As[Originer](t); ok {
		if s := o.Origin(); s != "" {
			return s
		}
	}
	return OriginNative
}

// Subject is what one call acts on, as an approver shows it and as an
// "always" answer is scoped to (ApprovalRequest's Command and Path). The
// zero Subject says nothing more than the tool's name does.
type Subject struct {
	Command string // the command line, for tools that run one
	Path    string // the file or directory acted on, for file tools
}

// Subjecter is implemented by tools that say what a call acts on, given
// its validated arguments. Subject must be cheap (decode only what it
// needs), must not fail (bad arguments give the zero Subject) and must be
// safe for concurrent use. Hosts read it with SubjectOf; Func declares
// one through its SubjectFn field.
type Subjecter interface {
	Subject(args json.RawMessage) Subject
}

// SubjectOf returns what a call of t with args acts on, as t declares it,
// itself or under its wrappers (found with As); the zero Subject when t
// declares nothing. Nothing is guessed from the arguments of a tool that
// does not declare its subject.
func SubjectOf(t Tool, args json.RawMessage) Subject {
	if s, ok := As[Subjecter](t); ok {
		return s.Subject(args)
	}
	return Subject{}
}

// CommandSubject is a Func.SubjectFn for tools whose "command" argument
// is the command line they run.
func CommandSubject(args json.RawMessage) Subject {
	return decodeSubject(args, func(a struct {
		Command string `json:"command"`
	}) Subject {
		return Subject{Command: a.Command}
	})
}

// PathSubject is a Func.SubjectFn for tools whose "path" argument names
// the file or directory they act on.
func PathSubject(args json.RawMessage) Subject {
	return decodeSubject(args, func(a struct {
		Path string `json:"path"`
	}) Subject {
		return Subject{Path: a.Path}
	})
}

// decodeSubject decodes args into A, a struct of the one field a subject
// needs (the decoder skips the others without keeping them), and makes
// the subject of it; arguments that do not decode give the zero Subject.
func decodeSubject[A any](args json.RawMessage, subject func(A) Subject) Subject {
	var a A
	if json.Unmarshal(args, &a) != nil {
		return Subject{}
	}
	return subject(a)
}
