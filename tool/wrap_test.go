package tool

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestWithTimeout(t *testing.T) {
	slow := &Func{ToolSpec: Spec{Name: "slow"}, Fn: func(ctx context.Context, call *Call) (*Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	res, err := Run(context.Background(), WithTimeout(slow, 10*time.Millisecond), &Call{})
	if err != nil || !res.IsError || res.TextOf() != "Tool error: slow timed out after 10ms" {
		t.Errorf("timed out call = %q, %v", res.TextOf(), err)
	}
	// A cancelled run is not a timeout: the tool's own error passes through.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, _ = Run(ctx, WithTimeout(slow, time.Hour), &Call{})
	if res.TextOf() != "Tool error: context canceled" {
		t.Errorf("cancelled call = %q", res.TextOf())
	}
	fast := fake("fast", nil)
	res, _ = Run(context.Background(), WithTimeout(fast, time.Hour), &Call{})
	if res.IsError || res.TextOf() != "fast ran with " {
		t.Errorf("fast call = %q", res.TextOf())
	}
	if WithTimeout(fast, 0) != Tool(fast) {
		t.Error("a zero timeout wrapped the tool")
	}
}

func TestSubset(t *testing.T) {
	s, _ := NewSet(fake("read", nil), fake("write", nil), fake("grep", nil))
	s.Alias("cat", "read")
	s.AliasWith("search", "grep", &AliasOptions{Advertise: true})
	sub, err := s.Subset("search", "cat")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"read", "search"}, names(sub.Specs())); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, ok := sub.Lookup("write"); ok {
		t.Error("write in the subset")
	}
	if tl, ok := sub.Lookup("cat"); !ok || tl.Spec().Name != "read" {
		t.Error("alias lost")
	}
	if _, err := s.Subset("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Subset(nope) = %v", err)
	}
	if err := sub.Add(fake("extra", nil)); err != nil || s.Len() != 3 {
		t.Error("adding to the subset changed the parent")
	}
}
