package acp

import (
	"context"
	"errors"
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/reinhq/rein/tool"
)

// Permission option ids offered in session/request_permission.
const (
	OptionAllowOnce   = "allow-once"
	OptionAllowAlways = "allow-always"
	OptionReject      = "reject"
)

// approve asks the editor whether a call of session l may run. The call is
// announced first, so the request refers to a tool call the editor shows.
func (s *Server) approve(ctx context.Context, l *live, req *tool.ApprovalRequest) (tool.Approval, error) {
	if l.tr == nil {
		return tool.Approval{Verdict: tool.Deny, Reason: "the session is not open yet"}, nil
	}
	l.tr.announceCall(req.CallID, req.Tool, req.Args)
	d := describe(req.Tool, req.Args, l.cwd)
	if s.opts.ApprovalTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.opts.ApprovalTimeout)
		defer cancel()
	}
	resp, err := s.conn.RequestPermission(ctx, sdk.RequestPermissionRequest{
		SessionId: l.id,
		ToolCall: sdk.ToolCallUpdate{
			ToolCallId: sdk.ToolCallId(req.CallID),
			Title:      sdk.Ptr(d.title),
			Kind:       sdk.Ptr(d.kind),
			Status:     sdk.Ptr(sdk.ToolCallStatusPending),
			Locations:  d.locations(),
		},
		Options: []sdk.PermissionOption{
			{Kind: sdk.PermissionOptionKindAllowOnce, Name: "Allow", OptionId: OptionAllowOnce},
			{Kind: sdk.PermissionOptionKindAllowAlways, Name: fmt.Sprintf("Always allow %s in this session", req.Tool), OptionId: OptionAllowAlways},
			{Kind: sdk.PermissionOptionKindRejectOnce, Name: "Reject", OptionId: OptionReject},
		},
	})
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return tool.Approval{Verdict: tool.Deny, Reason: fmt.Sprintf("the editor did not answer within %s", s.opts.ApprovalTimeout)}, nil
		}
		if ctx.Err() != nil {
			return tool.Approval{Verdict: tool.Deny, Reason: "the turn ended before the editor answered"}, ctx.Err()
		}
		return tool.Approval{}, fmt.Errorf("acp: session/request_permission: %w", err)
	}
	return verdict(resp.Outcome), nil
}

// verdict maps the editor's answer onto an approval; "allow always" is
// remembered by rein's policy as a session rule for the tool.
func verdict(o sdk.RequestPermissionOutcome) tool.Approval {
	if o.Selected == nil {
		return tool.Approval{Verdict: tool.Deny, Reason: "the editor cancelled the permission request"}
	}
	switch o.Selected.OptionId {
	case OptionAllowOnce:
		return tool.Approval{Verdict: tool.Allow, Reason: "allowed once in the editor"}
	case OptionAllowAlways:
		return tool.Approval{Verdict: tool.Allow, Always: true, Reason: "always allowed in the editor for this session"}
	case OptionReject:
		return tool.Approval{Verdict: tool.Deny, Reason: "rejected in the editor"}
	}
	return tool.Approval{Verdict: tool.Deny, Reason: fmt.Sprintf("the editor chose option %q, which rein did not offer", o.Selected.OptionId)}
}
