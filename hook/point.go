package hook

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/reinhq/rein/llm"
)

// Point names an interception point on records and errors.
type Point string

// Trail is what every chain's outcome carries: the handler whose
// decision ended or shaped the chain, and every decision that was not
// "continue", in order.
type Trail struct {
	Hook    string
	Records []Record
}

func (t *Trail) trail() *Trail { return t }

// outcome constrains the outcome types of points: a struct embedding
// Trail, reached through its pointer.
type outcome[O any] interface {
	*O
	trail() *Trail
}

// PointDef declares an interception point once: its name, its input
// type I, its decision type D and the outcome O that the decisions of its
// handlers fold into. Handlers are func(ctx, I) (D, error), registered
// with On and run by Run. The points of this package are declared this
// way (Prompt, Request, ToolGate, …); a host may declare its own.
type PointDef[I any, D Decision, O any] struct {
	point  Point
	bit    uint64
	notify bool // a notification: every handler is told; errors do not end it
	start  func(in I) O
	fold   func(out *O, in I, hook string, d D) (more bool)
	trail  func(out *O) *Trail
}

var nextBit atomic.Uint32

func newBit(p Point) uint64 {
	n := nextBit.Add(1) - 1
	if n >= 64 {
		panic(fmt.Sprintf("hook: too many points declared (%s is the 65th)", p))
	}
	return 1 << n
}

// NewPoint declares an interception point named p. start gives the
// outcome before any handler decides; fold applies one handler's decision
// (never a "no decision") to the outcome, and reports whether the next
// handler runs. Handlers of one point run agent-level first, then
// run-level; each decision is recorded before it is folded.
func NewPoint[I any, D Decision, O any, PO outcome[O]](p Point, start func(in I) O, fold func(out *O, in I, hook string, d D) bool) *PointDef[I, D, O] {
	return &PointDef[I, D, O]{point: p, bit: newBit(p), start: start, fold: fold, trail: func(o *O) *Trail { return PO(o).trail() }}
}

// NewNotice declares a notification point: its handlers are told in turn
// and decide nothing (D is usually Notice); a handler's failure is
// reported after every handler was told, and ends nothing.
func NewNotice[I any, D Decision, O any, PO outcome[O]](p Point, start func(in I) O) *PointDef[I, D, O] {
	def := NewPoint[I, D, O, PO](p, start, func(*O, I, string, D) bool { return true })
	def.notify = true
	return def
}

// Name returns the point's name.
func (p *PointDef[I, D, O]) Name() Point { return p.point }

func (p *PointDef[I, D, O]) mask() uint64 { return p.bit }

// Handler is the function type of a point's handlers.
type Handler[I any, D Decision] func(ctx context.Context, in I) (D, error)

// On registers a handler of point p on s, after those already there, and
// returns s.
func On[I any, D Decision, O any](s *Set, p *PointDef[I, D, O], name string, fn Handler[I, D]) *Set {
	if s.by == nil {
		s.by = map[uint64][]entry{}
	}
	s.by[p.bit] = append(s.by[p.bit], entry{name: name, fn: fn})
	s.mask |= p.bit
	return s
}

type entry struct {
	name string
	fn   any // a Handler[I, D] of the point it is registered for
}

// caller is what a record needs to know of an input: the call it is about.
type caller interface{ callID() llm.CallID }

// Run runs the handlers of p in chain c on in and returns the outcome. A
// handler's error or panic is a *Error that fails the boundary closed (for
// a notification, it is returned after every handler was told). While the
// chain runs, p is marked on ctx: a handler's own calls into the agent
// run without this chain.
func (p *PointDef[I, D, O]) Run(ctx context.Context, c Chain, in I) (O, error) {
	out := p.start(in)
	if c.mask&p.bit == 0 || active(ctx, p.point) {
		return out, nil
	}
	ctx = enter(ctx, p.point)
	var first error
	for _, s := range c.sets {
		if s == nil {
			continue
		}
		for _, e := range s.by[p.bit] {
			d, err := call(ctx, p.point, e.name, e.fn.(Handler[I, D]), in)
			if err != nil {
				if !p.notify {
					return out, err
				}
				if first == nil {
					first = err
				}
				continue
			}
			if none(d) {
				continue
			}
			rec := Record{Point: p.point, Hook: e.name, Decision: d.Kind(), Reason: reasonOf(d)}
			if ci, ok := any(in).(caller); ok {
				rec.CallID = ci.callID()
			}
			t := p.trail(&out)
			t.Records = append(t.Records, rec)
			if c.rec != nil {
				c.rec(rec)
			}
			if !p.fold(&out, in, e.name, d) {
				return out, nil
			}
		}
	}
	return out, first
}

// none reports whether d is no decision: nil, or a typed nil.
func none(d Decision) bool { return d == nil || d.Kind() == "" }

func call[I any, D Decision](ctx context.Context, p Point, name string, fn Handler[I, D], in I) (d D, err error) {
	defer func() {
		if r := recover(); r != nil {
			var zero D
			d, err = zero, &Error{Point: p, Hook: name, Err: fmt.Errorf("panic: %v", r)}
		}
	}()
	d, err = fn(ctx, in)
	if err != nil {
		err = &Error{Point: p, Hook: name, Err: err}
	}
	return d, err
}

// Chain is the handler sets of one run, in order: the agent's, then the
// run's, then any the loop adds of its own. The zero Chain has no
// handlers and dispatches for free.
type Chain struct {
	sets []*Set
	mask uint64
	rec  func(Record)
}

// Join returns the chain of sets, in order; nil sets are skipped. The
// sets must not change afterwards.
func Join(sets ...*Set) Chain {
	c := Chain{sets: sets}
	for _, s := range sets {
		if s != nil {
			c.mask |= s.mask
		}
	}
	return c
}

// Recording returns c with rec told of every decision recorded on it, as
// the decision is taken: the agent writes each as a hook.decision event.
func (c Chain) Recording(rec func(Record)) Chain {
	c.rec = rec
	return c
}

// Sets returns the chain's sets, in order.
func (c Chain) Sets() []*Set { return c.sets }

// Has reports whether the chain has any handler for point p. It is cheap
// enough to call before building a point's input.
func (c Chain) Has(p interface{ mask() uint64 }) bool { return c.mask&p.mask() != 0 }

type activeKey struct{}

type activePoints struct {
	p      Point
	parent *activePoints
}

// active reports whether point p's chain is running on ctx.
func active(ctx context.Context, p Point) bool {
	v, _ := ctx.Value(activeKey{}).(*activePoints)
	for ; v != nil; v = v.parent {
		if v.p == p {
			return true
		}
	}
	return false
}

// Within reports whether ctx is inside a running chain of point p, that
// is, whether the code holding ctx was called by a handler of p.
func Within(ctx context.Context, p Point) bool { return active(ctx, p) }

func enter(ctx context.Context, p Point) context.Context {
	parent, _ := ctx.Value(activeKey{}).(*activePoints)
	return context.WithValue(ctx, activeKey{}, &activePoints{p, parent})
}

// Error is a handler's failure: it returned an error or panicked. The
// boundary it guarded fails closed.
type Error struct {
	Point Point
	Hook  string
	Err   error
}

// Error names the point and the handler.
func (e *Error) Error() string {
	return fmt.Sprintf("hook %q at %s failed: %v; the %s boundary was failed closed", e.Hook, e.Point, e.Err, e.Point)
}

// Unwrap returns the handler's error.
func (e *Error) Unwrap() error { return e.Err }
