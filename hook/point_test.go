package hook_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/hook"
)

// A point a host declares for itself: one declaration, then On and Run
// as for the package's own points.
type auditInput struct{ Target string }

type auditOutcome struct {
	Denied *hook.Deny
	hook.Trail
}

var audit = hook.NewPoint[*auditInput, hook.GateDecision, auditOutcome]("audit",
	func(*auditInput) auditOutcome { return auditOutcome{} },
	func(out *auditOutcome, _ *auditInput, name string, d hook.GateDecision) bool {
		if deny, ok := d.(*hook.Deny); ok {
			out.Denied, out.Hook = deny, name
			return false
		}
		return true
	})

func TestDeclaredPointDispatchesRecordsAndFailsClosed(t *testing.T) {
	var seen []string
	look := func(name string, d hook.GateDecision) hook.Handler[*auditInput, hook.GateDecision] {
		return func(_ context.Context, in *auditInput) (hook.GateDecision, error) {
			seen = append(seen, name+":"+in.Target)
			return d, nil
		}
	}
	agentSet := hook.On(new(hook.Set), audit, "first", look("first", nil))
	runSet := hook.On(new(hook.Set), audit, "deny", look("deny", &hook.Deny{Reason: "friday"}))
	hook.On(runSet, audit, "after", look("after", nil))
	var told []hook.Record
	chain := hook.Join(agentSet, runSet).Recording(func(r hook.Record) { told = append(told, r) })
	if !chain.Has(audit) || chain.Has(hook.ToolGate) {
		t.Fatalf("Has: audit=%v tool-gate=%v", chain.Has(audit), chain.Has(hook.ToolGate))
	}
	out, err := audit.Run(context.Background(), chain, &auditInput{Target: "prod"})
	if err != nil || out.Denied == nil || out.Hook != "deny" {
		t.Fatalf("out=%+v err=%v", out, err)
	}
	if diff := cmp.Diff([]string{"first:prod", "deny:prod"}, seen); diff != "" {
		t.Errorf("handlers run (-want +got):\n%s", diff)
	}
	want := []hook.Record{{Point: "audit", Hook: "deny", Decision: "deny", Reason: "friday"}}
	if diff := cmp.Diff(want, out.Records); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, told); diff != "" {
		t.Errorf("recorded (-want +got):\n%s", diff)
	}
	// A typed nil decision is no decision; a panic fails the boundary.
	var typedNil *hook.Deny
	s := hook.On(new(hook.Set), audit, "nil", look("nil", typedNil))
	hook.On(s, audit, "boom", func(context.Context, *auditInput) (hook.GateDecision, error) { panic("boom") })
	out, err = audit.Run(context.Background(), hook.Join(s), &auditInput{})
	var he *hook.Error
	if !errors.As(err, &he) || he.Hook != "boom" || he.Point != "audit" || out.Denied != nil {
		t.Errorf("out=%+v err=%v", out, err)
	}
}

func TestGateStopDeniesAndStops(t *testing.T) {
	s := new(hook.Set).ToolGate("halt", func(context.Context, *hook.ToolInput) (hook.GateDecision, error) {
		return &hook.Stop{Reason: "enough"}, nil
	})
	out, err := hook.ToolGate.Run(context.Background(), hook.Join(s), &hook.ToolInput{})
	if err != nil || out.Stop == nil || out.Denied == nil || out.Denied.Reason != "enough" || out.Hook != "halt" {
		t.Errorf("out=%+v err=%v", out, err)
	}
}

// A point declared once, its handlers registered with On and run with Run.
func ExampleNewPoint() {
	hs := hook.On(new(hook.Set), audit, "no-friday", func(_ context.Context, in *auditInput) (hook.GateDecision, error) {
		if in.Target == "prod" {
			return &hook.Deny{Reason: "no deploys to prod on a Friday"}, nil
		}
		return nil, nil
	})
	for _, target := range []string{"staging", "prod"} {
		out, _ := audit.Run(context.Background(), hook.Join(hs), &auditInput{Target: target})
		if out.Denied != nil {
			fmt.Println(target+":", "denied by", out.Hook+":", out.Denied.Reason)
		} else {
			fmt.Println(target+":", "allowed")
		}
	}
	// Output:
	// staging: allowed
	// prod: denied by no-friday: no deploys to prod on a Friday
}
