package tooltest_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/tooltest"
)

func TestMemStateStore(t *testing.T) {
	tooltest.TestStateStore(t, func(*testing.T) tool.StateStore { return tool.NewMemStateStore() })
}

func TestRecorder(t *testing.T) {
	r := tooltest.NewRecorder("rec", &tool.Annotations{ReadOnly: true})
	res, err := tool.Run(context.Background(), r, &tool.Call{ID: "c1", Args: json.RawMessage(`{"a":1}`)})
	if err != nil || res.TextOf() != "ok" {
		t.Fatalf("default answer: %q %v", res.TextOf(), err)
	}
	r.Answer(func(call *tool.Call) (*tool.Result, error) { return nil, errors.New("nope") })
	res, _ = tool.Run(context.Background(), r, &tool.Call{ID: "c2"})
	if res.TextOf() != "Tool error: nope" {
		t.Errorf("scripted answer: %q", res.TextOf())
	}
	calls := r.Calls()
	if len(calls) != 2 || calls[0].ID != "c1" || string(calls[0].Args) != `{"a":1}` || calls[1].ID != "c2" {
		t.Errorf("calls = %+v", calls)
	}
}
