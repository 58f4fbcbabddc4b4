package mcp_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/mcp"
	"github.com/reinhq/rein/mcp/mcptest"
)

// eventLog keeps the events of one kind.
type eventLog[T mcp.Event] struct {
	mu  sync.Mutex
	got []T
}

func (l *eventLog[T]) add(ev mcp.Event) {
	if e, ok := ev.(T); ok {
		l.mu.Lock()
		l.got = append(l.got, e)
		l.mu.Unlock()
	}
}

func (l *eventLog[T]) all() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]T(nil), l.got...)
}

func TestElicitFormAcceptDeclineCancel(t *testing.T) {
	tests := []struct {
		name   string
		answer *mcp.ElicitResult
		want   string
	}{
		// "41" comes back as the integer the schema asks for.
		{"accept", &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"name": "Ada", "age": "41"}}, `accept {"age":41,"name":"Ada"}`},
		{"decline", &mcp.ElicitResult{Action: mcp.ElicitDecline, Content: map[string]any{"name": "dropped"}}, "decline null"},
		{"cancel", &mcp.ElicitResult{Action: mcp.ElicitCancel}, "cancel null"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var asked *mcp.ElicitRequest
			var events eventLog[*mcp.Elicited]
			m := newManager(t, &mcp.Options{
				Servers: []mcp.ServerConfig{{Name: "host", NewTransport: inProcess(t, mcptest.NewHostServer(nil), nil)}},
				Events:  events.add,
				Elicit: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = req
					return tt.answer, nil
				},
			})
			res, err := m.Call(context.Background(), "host", "form", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := res.TextOf(); got != tt.want {
				t.Errorf("the server got %q, want %q", got, tt.want)
			}
			wantFields := []mcp.ElicitField{{Name: "name", Type: "string", Title: "Your name", Required: true}, {Name: "age", Type: "integer"}}
			if asked == nil || asked.Mode != mcp.ElicitForm || asked.Message != "Who are you?" {
				t.Fatalf("the host was asked %+v", asked)
			}
			fields := asked.Fields
			if len(fields) == 2 && fields[0].Name == "age" { // Go maps lose the order the server wrote
				fields = []mcp.ElicitField{fields[1], fields[0]}
			}
			if diff := cmp.Diff(wantFields, fields); diff != "" {
				t.Errorf("fields (-want +got):\n%s", diff)
			}
			evs := events.all()
			if len(evs) != 1 || evs[0].Action != tt.answer.Action || evs[0].Err != nil || evs[0].Server != "host" {
				t.Errorf("Elicited events = %+v, want one with action %s", evs, tt.answer.Action)
			}
		})
	}
}

// An answer that does not match the form never reaches the server as an
// accept: it fails, and the failure is recorded.
func TestElicitAnswerValidated(t *testing.T) {
	var events eventLog[*mcp.Elicited]
	m := newManager(t, &mcp.Options{
		Servers: []mcp.ServerConfig{{Name: "host", NewTransport: inProcess(t, mcptest.NewHostServer(nil), nil)}},
		Events:  events.add,
		Elicit: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: mcp.ElicitAccept, Content: map[string]any{"age": "old"}}, nil // no name, age not a number
		},
	})
	_, err := m.Call(context.Background(), "host", "form", nil)
	if err == nil || !strings.Contains(err.Error(), `missing required property "name"`) || strings.Contains(err.Error(), "dropped") {
		t.Errorf("call with a bad answer = %v, want it to fail naming the missing field", err)
	}
	evs := events.all()
	if len(evs) != 1 || evs[0].Err == nil || evs[0].Action != "" {
		t.Errorf("Elicited events = %+v, want one failure", evs)
	}
}

func TestElicitURLMode(t *testing.T) {
	var asked *mcp.ElicitRequest
	m := newManager(t, &mcp.Options{
		Servers: []mcp.ServerConfig{{Name: "host", NewTransport: inProcess(t, mcptest.NewHostServer(nil), nil)}},
		Elicit: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = req
			return &mcp.ElicitResult{Action: mcp.ElicitAccept}, nil
		},
	})
	res, err := m.Call(context.Background(), "host", "url", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.TextOf() != "accept null" {
		t.Errorf("the server got %q", res.TextOf())
	}
	if asked == nil || asked.Mode != mcp.ElicitURL || asked.URL != "https://example.com/signin" || asked.ElicitationID != "e1" {
		t.Errorf("the host was asked %+v", asked)
	}
}

// Without a handler, rein does not offer elicitation; a failing handler
// fails the call (it is not a decline), and the connection stays up.
func TestElicitUnavailableAndFailing(t *testing.T) {
	m := newManager(t, &mcp.Options{Servers: []mcp.ServerConfig{{Name: "host", NewTransport: inProcess(t, mcptest.NewHostServer(nil), nil)}}})
	_, err := m.Call(context.Background(), "host", "form", nil)
	if err == nil || !strings.Contains(err.Error(), "does not support elicitation") {
		t.Errorf("elicit without a handler = %v, want a failure saying so", err)
	}
	var connects atomic.Int32
	m = newManager(t, &mcp.Options{
		Servers: []mcp.ServerConfig{{Name: "host", NewTransport: inProcess(t, mcptest.NewHostServer(nil), &connects)}},
		Elicit: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("the terminal went away")
		},
	})
	_, err = m.Call(context.Background(), "host", "form", nil)
	if err == nil || !strings.Contains(err.Error(), "the terminal went away") || strings.Contains(err.Error(), "dropped") {
		t.Errorf("a failing handler = %v, want the call to fail with its error", err)
	}
	if st := m.Servers()[0].State; st != mcp.StateConnected || connects.Load() != 1 {
		t.Errorf("after a failing handler: state %s, %d connections; want the one connection kept", st, connects.Load())
	}
}
