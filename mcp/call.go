package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/tool"
)

// call runs one tool call on the server.
func (s *server) call(ctx context.Context, remote, name, callID, session string, args json.RawMessage) (*tool.Result, error) {
	before := ToolBefore{Server: s.cfg.Name, Tool: remote, Name: name, CallID: callID, Session: session}
	s.m.emit(&before)
	start := time.Now()
	res, err := s.callOnce(ctx, remote, session, args)
	if err != nil {
		s.m.emit(&ToolError{ToolBefore: before, Duration: time.Since(start), Err: err})
		return nil, err
	}
	s.m.emit(&ToolAfter{ToolBefore: before, Duration: time.Since(start), IsError: res.IsError, OutputBytes: outputBytes(res)})
	return res, nil
}

func (s *server) callOnce(ctx context.Context, remote, session string, args json.RawMessage) (*tool.Result, error) {
	if s.cfg.CallTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.cfg.CallTimeout)
		defer cancel()
	}
	if s.cfg.Auth != nil {
		h, err := s.m.sessionHeaders(ctx, s, session)
		if err != nil {
			return nil, err
		}
		ctx = context.WithValue(ctx, headersKey{}, h)
	}
	cs, err := s.ensure(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	_, offered := s.byName[remote]
	s.mu.Unlock()
	if !offered {
		return nil, fmt.Errorf("mcp: server %q no longer offers tool %q: %w", s.cfg.Name, remote, ErrUnknownTool)
	}
	if len(bytes.TrimSpace(args)) == 0 || string(args) == "null" {
		args = json.RawMessage(`{}`)
	}
	ctx, span := s.startCallSpan(ctx, remote, cs)
	start := time.Now()
	r, err := cs.CallTool(ctx, &sdk.CallToolParams{Meta: traceMeta(ctx), Name: remote, Arguments: args})
	var res *tool.Result
	if err == nil {
		res = resultOf(r)
	}
	s.measureCall(ctx, remote, time.Since(start), err, res)
	endCallSpan(span, res, err)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("mcp: %s on server %q: %w", remote, s.cfg.Name, context.Cause(ctx))
		}
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) {
			// Not an answer from the server: the connection failed.
			s.dropped(cs, err)
			return nil, fmt.Errorf("mcp: server %q dropped the connection during the call to %s (%v); it is reconnecting, so the call may be tried again", s.cfg.Name, remote, err)
		}
		return nil, fmt.Errorf("mcp: %s on server %q: %w", remote, s.cfg.Name, err)
	}
	return res, nil
}
