package tool_test

import (
	"context"
	"errors"
	"testing"

	"github.com/reinhq/rein/tool"
)

func TestFuncDoesNotRunWhenCancelled(t *testing.T) {
	ran := false
	f := tool.Func{ToolSpec: tool.Spec{Name: "t"}, Fn: func(context.Context, *tool.Call) (*tool.Result, error) {
		ran = true
		return tool.Text("ok"), nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.Call(ctx, &tool.Call{Name: "t"}); !errors.Is(err, context.Canceled) || ran {
		t.Errorf("err = %v, ran = %v; want context.Canceled and no run", err, ran)
	}
}

func TestDecodeArgs(t *testing.T) {
	var v struct {
		N int `json:"n"`
	}
	if r := tool.DecodeArgs(&tool.Call{Name: "t", Args: []byte(" ")}, &v); r != nil || v.N != 0 {
		t.Errorf("empty args: result %v, v %+v; want {} decoded", r, v)
	}
	if r := tool.DecodeArgs(&tool.Call{Name: "t", Args: []byte(`{"n":3}`)}, &v); r != nil || v.N != 3 {
		t.Errorf("valid args: result %v, v %+v", r, v)
	}
	r := tool.DecodeArgs(&tool.Call{Name: "t", Args: []byte(`{"n":"x"}`)}, &v)
	if r == nil || !r.IsError || r.TextOf() == "" || r.TextOf()[:len("Invalid arguments for t: ")] != "Invalid arguments for t: " {
		t.Errorf("bad args: result %+v, want an error result naming the tool", r)
	}
}
