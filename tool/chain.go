package tool

// Wrapper is a Tool that changes how another tool runs. Every wrapper in
// this package (WithTimeout, DryRun) is one, and a Middleware's wrappers
// should be too: As and the helpers built on it (OriginOf, SubjectOf)
// look through Unwrap for what the wrapped tool declares, so a wrapper
// need not forward any optional interface.
type Wrapper interface {
	Tool
	// Unwrap returns the tool this one wraps.
	Unwrap() Tool
}

// Unwrap returns the tool t wraps, or nil when t is not a Wrapper.
func Unwrap(t Tool) Tool {
	if w, ok := t.(Wrapper); ok {
		return w.Unwrap()
	}
	return nil
}

// As returns the first tool in t's chain that is a T, and true; the zero T
// and false when none is. The chain is t itself, then what Unwrap returns,
// and so on, as errors.As walks an error's chain. T is usually one of the
// optional interfaces a tool may implement (Validated, Originer,
// Subjecter, io.Closer) but may be a concrete tool type.
//
// Look optional interfaces up with As rather than a type assertion: an
// assertion on a wrapped tool sees only the wrapper.
func As[T any](t Tool) (T, bool) {
	for t != nil {
		if v, ok := t.(T); ok {
			return v, true
		}
		t = Unwrap(t)
	}
	var zero T
	return zero, false
}

// Middleware changes how a tool runs by wrapping it, as WithTimeout and
// DryRun do. The tool it returns should be a Wrapper of the one it was
// given, so As still finds what that tool declares.
type Middleware func(Tool) Tool

// Wrap applies mws to t, the first listed outermost: Wrap(t, a, b) is
// a(b(t)), so a call passes through a, then b, then reaches t. Nil
// middlewares are skipped; with none, Wrap returns t.
func Wrap(t Tool, mws ...Middleware) Tool {
	for i := len(mws) - 1; i >= 0; i-- {
		if mws[i] != nil {
			t = mws[i](t)
		}
	}
	return t
}

// WrapSet returns a new set holding each tool of s wrapped by Wrap with
// mws, with the same order and aliases; s is unchanged. The set finds
// tools by name, so the middlewares must keep each tool's Spec().Name.
func WrapSet(s *Set, mws ...Middleware) *Set {
	v := s.load()
	out := &Set{}
	if v == nil {
		return out
	}
	n := v.clone()
	for i, t := range n.tools {
		n.tools[i] = Wrap(t, mws...)
	}
	out.view.Store(n)
	return out
}
