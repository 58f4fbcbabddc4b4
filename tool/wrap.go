package tool

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// WithTimeout wraps t so each call's context ends after d. A call that
// returns because its time ran out becomes the error result
// "Tool error: <name> timed out after <d>". Tools must honour ctx for the
// timeout to take effect; d <= 0 returns t itself. The wrapper is a
// Wrapper: As finds what t declares through it.
func WithTimeout(t Tool, d time.Duration) Tool {
	if d <= 0 {
		return t
	}
	return &timeout{t: t, d: d}
}

type timeout struct {
	t Tool
	d time.Duration
}

// Spec returns the wrapped tool's spec.
func (w *timeout) Spec() Spec { return w.t.Spec() }

// Unwrap returns the wrapped tool.
func (w *timeout) Unwrap() Tool { return w.t }

// Call runs the wrapped tool under the deadline.
func (w *timeout) Call(ctx context.Context, call *Call) (*Result, error) {
	tctx, cancel := context.WithTimeout(ctx, w.d)
	defer cancel()
	res, err := w.t.Call(tctx, call)
	if ctx.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) && (err != nil || res == nil || res.IsError) {
		return Errorf("Tool error: %s timed out after %v", w.t.Spec().Name, w.d), nil
	}
	return res, err
}

// Subset returns a new set holding the tools of s named in names (real
// names or aliases), in the order of s, with the aliases that point to
// them. An unknown name is ErrNotFound. Use it to give a subagent fewer
// tools than its parent.
func (s *Set) Subset(names ...string) (*Set, error) {
	v := s.load()
	keep := make(map[string]bool, len(names))
	for _, n := range names {
		real, ok := s.Canonical(n)
		if !ok {
			return nil, fmt.Errorf("tool: subset %q: %w", n, ErrNotFound)
		}
		keep[real] = true
	}
	out := &Set{}
	n := (*setView)(nil).clone()
	if v != nil {
		for _, t := range v.tools {
			name := t.Spec().Name
			if !keep[name] {
				continue
			}
			n.byName[name] = len(n.tools)
			n.tools = append(n.tools, t)
			if a, ok := v.advertise[name]; ok {
				n.advertise[name] = a
			}
		}
		for a, real := range v.aliases {
			if keep[real] {
				n.aliases[a] = real
			}
		}
	}
	out.view.Store(n)
	return out, nil
}
