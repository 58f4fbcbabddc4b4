package mcp_test

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverEnd is the server's side of an in-memory pipe: its session and
// the connection under it.
type serverEnd struct {
	ss   *sdk.ServerSession
	conn sdk.Connection
}

// connectInMemory connects srv to a fresh in-memory pipe and returns the
// client's transport and the server's end.
func connectInMemory(srv *sdk.Server) (sdk.Transport, *serverEnd, error) {
	ct, st := sdk.NewInMemoryTransports()
	end := &serverEnd{}
	ss, err := srv.Connect(context.Background(), &recordConn{Transport: st, end: end}, nil)
	if err != nil {
		return nil, nil, err
	}
	end.ss = ss
	return ct, end, nil
}

// close drops the pipe, then closes the session. The pipe goes first:
// that ends the server's read loop, which cancels every request in
// flight. ServerSession.Close alone waits for those requests, and waits
// forever on a client's subscriptions/listen that the server has read but
// not yet begun to handle when Close cancels the listens it knows of.
func (e *serverEnd) close() {
	e.conn.Close()
	e.ss.Close()
}

// recordConn keeps the connection its transport makes in end.
type recordConn struct {
	sdk.Transport
	end *serverEnd
}

func (r *recordConn) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := r.Transport.Connect(ctx)
	r.end.conn = c
	return c, err
}
