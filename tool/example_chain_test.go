package tool_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/reinhq/rein/tool"
)

// conn is a tool holding a connection, which its host must close.
type conn struct{ tool.Func }

func (c *conn) Close() error { fmt.Println("connection closed"); return nil }

func (c *conn) Origin() string { return tool.OriginMCP }

func ExampleAs() {
	c := &conn{tool.Func{ToolSpec: tool.Spec{Name: "query"}}}
	t := tool.DryRun(tool.WithTimeout(c, time.Minute))

	// A type assertion sees only the outer wrapper.
	_, isCloser := t.(io.Closer)
	fmt.Println("wrapper is a Closer:", isCloser)

	// As looks through every wrapper.
	if cl, ok := tool.As[io.Closer](t); ok {
		cl.Close()
	}
	fmt.Println("origin:", tool.OriginOf(t))
	// Output:
	// wrapper is a Closer: false
	// connection closed
	// origin: mcp
}

// logged is a middleware that prints each call's name as it starts.
func logged(prefix string) tool.Middleware {
	return func(next tool.Tool) tool.Tool { return &logging{next: next, prefix: prefix} }
}

type logging struct {
	next   tool.Tool
	prefix string
}

func (l *logging) Spec() tool.Spec   { return l.next.Spec() }
func (l *logging) Unwrap() tool.Tool { return l.next } // keeps what next declares visible to tool.As

func (l *logging) Call(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	fmt.Println(l.prefix, call.Name)
	return l.next.Call(ctx, call)
}

func ExampleWrap() {
	read := &tool.Func{
		ToolSpec:  tool.Spec{Name: "read", Annotations: &tool.Annotations{ReadOnly: true}},
		Fn:        func(ctx context.Context, call *tool.Call) (*tool.Result, error) { return tool.Text("contents"), nil },
		SubjectFn: tool.PathSubject,
	}
	// The first middleware listed is the outermost: "outer" sees the call
	// first.
	t := tool.Wrap(read, logged("outer"), tool.DryRun, logged("inner"))
	args := json.RawMessage(`{"path":"go.mod"}`)
	res, _ := tool.Run(context.Background(), t, &tool.Call{Name: "read", Args: args})
	fmt.Println(res.TextOf())
	fmt.Printf("%+v\n", tool.SubjectOf(t, args))
	// Output:
	// outer read
	// inner read
	// contents
	// {Command: Path:go.mod}
}
