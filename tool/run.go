package tool

import (
	"context"
	"fmt"
	"runtime/debug"
)

// MetaError is the Result.Meta key under which Run leaves the error a
// tool returned, or a *PanicError for a panic, so a host's tool-error
// handling can see what failed. It is never sent to the model. Read it
// with ErrorOf.
const MetaError = "tool.error"

// PanicError is a tool's panic, recovered by Run.
type PanicError struct {
	Value any    // what the tool panicked with
	Stack []byte // the goroutine's stack at the panic
}

// Error returns "panic: <value>".
func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// ErrorOf returns the error Run left in res: the error the tool returned,
// as it returned it (so errors.Is(err, context.Canceled) tells a
// cancelled call), or a *PanicError when it panicked (errors.As tells
// which). It is nil when the tool returned a result, an error result
// included, and for a nil res.
func ErrorOf(res *Result) error {
	if res == nil {
		return nil
	}
	err, _ := res.Meta[MetaError].(error)
	return err
}

// Run calls t and settles the call. It is the one way the agent loop
// calls a tool, and hosts that run tools themselves should use it too:
//
//   - a nil Progress is replaced by one that discards reports, so tools
//     may always call it;
//   - an error returned by the tool, or a panic, becomes an error result
//     "Tool error: <message>" (the run goes on), with the error in
//     Meta[MetaError] (see ErrorOf); a panic's *PanicError keeps the
//     stack;
//   - a nil result becomes an empty one;
//   - when call.State is a *StagedState, its writes are committed if the
//     call succeeded (no error, no panic, result not IsError) and
//     discarded otherwise. The commit is not cancelled with ctx: a call
//     that did its work keeps its state even when ctx ends as it returns.
//
// err is only for failures of rein itself, such as a state commit that
// did not reach the store; the result is still returned with it.
func Run(ctx context.Context, t Tool, call *Call) (res *Result, err error) {
	if call.Progress == nil {
		c := *call // the caller's call is left as it is
		c.Progress = func(Progress) {}
		call = &c
	}
	res, failed := runGuarded(ctx, t, call)
	staged, _ := call.State.(*StagedState)
	if staged == nil {
		return res, nil
	}
	if failed || res.IsError {
		staged.Discard()
		return res, nil
	}
	if err := staged.Commit(context.WithoutCancel(ctx)); err != nil {
		return res, fmt.Errorf("tool: run %s: %w", t.Spec().Name, err)
	}
	return res, nil
}

func runGuarded(ctx context.Context, t Tool, call *Call) (res *Result, failed bool) {
	defer func() {
		if v := recover(); v != nil {
			perr := &PanicError{Value: v, Stack: debug.Stack()}
			res = Errorf("Tool error: %v", perr)
			res.WithMeta(MetaError, perr)
			failed = true
		}
	}()
	res, err := t.Call(ctx, call)
	if err != nil {
		return Errorf("Tool error: %v", err).WithMeta(MetaError, err), true
	}
	if res == nil {
		res = &Result{}
	}
	return res, false
}
