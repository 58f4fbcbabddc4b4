package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// TurnRequest is the body of POST …/turns.
type TurnRequest struct {
	Prompt string `json:"prompt"`
}

// TurnStarted answers POST …/turns: the turn's events are the session's
// events after After.
type TurnStarted struct {
	Session session.ID `json:"session"`
	After   int64      `json:"after"`
	Events  string     `json:"events"`
}

// MessageRequest is the body of POST …/steer and …/follow-up.
type MessageRequest struct {
	Message string `json:"message"`
}

// ReasonRequest is the optional body of POST …/cancel and
// …/tools/{call_id}/cancel.
type ReasonRequest struct {
	Reason string `json:"reason,omitempty"`
}

// ApprovalDecision is the body of POST …/approvals/{call_id}: decision is
// allow, deny or always (allow this tool for the rest of the session).
type ApprovalDecision struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason,omitempty"`
}

// liveSession resolves {id} to a live session, answering the errors.
func (s *Server) liveSession(w http.ResponseWriter, r *http.Request) (*live, bool) {
	id, ok := sessionID(w, r)
	if !ok {
		return nil, false
	}
	l, err := s.session(r.Context(), id)
	if err != nil {
		if errors.Is(err, session.ErrNotFound) {
			writeNoSession(w, id)
		} else {
			writeAgentError(w, err)
		}
		return nil, false
	}
	return l, true
}

// textRequest reads a body whose text field must not be empty, then
// resolves {id} to a live session, answering the errors.
func (s *Server) textRequest(w http.ResponseWriter, r *http.Request, body any, text *string, code, hint string) (*live, bool) {
	if !decodeBody(w, r, body, false) {
		return nil, false
	}
	if strings.TrimSpace(*text) == "" {
		writeError(w, http.StatusBadRequest, code, hint)
		return nil, false
	}
	return s.liveSession(w, r)
}

func (s *Server) startTurn(w http.ResponseWriter, r *http.Request) {
	var body TurnRequest
	l, ok := s.textRequest(w, r, &body, &body.Prompt, "empty_prompt", `the prompt is empty; send {"prompt": "what to do"}`)
	if !ok {
		return
	}
	h, ok := l.begin()
	if !ok {
		writeError(w, http.StatusConflict, "turn_running",
			"a turn is already running in this session; wait for its turn.end event, steer it (POST …/steer), queue a follow-up (POST …/follow-up) or cancel it (POST …/cancel)")
		return
	}
	ctx := context.WithoutCancel(r.Context())
	info, err := s.opts.Store.Info(ctx, l.id)
	if err == nil && info.Meta[MetaTitle] == "" {
		err = s.opts.Store.SetMeta(ctx, l.id, MetaTitle, titleOf([]llm.Part{&llm.Text{Text: body.Prompt}}))
	}
	s.mu.Lock()
	closing := s.close
	if !closing && err == nil {
		s.runs.Add(1)
	}
	s.mu.Unlock()
	if closing || err != nil {
		l.mu.Lock()
		l.running = false
		close(l.done)
		l.mu.Unlock()
		if closing {
			writeAgentError(w, errServerClosed)
		} else {
			writeStoreError(w, l.id, err)
		}
		return
	}
	go l.run(h.Agent, &agent.RunRequest{Prompt: body.Prompt, Hooks: h.RunHooks}, info.LastSeq)
	writeJSON(w, http.StatusAccepted, TurnStarted{
		Session: l.id, After: info.LastSeq,
		Events: fmt.Sprintf("/v1/sessions/%s/events?after=%d", l.id, info.LastSeq),
	})
}

// noTurn answers a control request that needs a running turn.
func noTurn(w http.ResponseWriter, what string) {
	writeError(w, http.StatusConflict, "no_turn_running", fmt.Sprintf("no turn is running in this session, so there is nothing to %s; start one with POST …/turns", what))
}

func (s *Server) steer(w http.ResponseWriter, r *http.Request) {
	s.message(w, r, "steer", (*agent.Agent).Steer)
}

func (s *Server) followUp(w http.ResponseWriter, r *http.Request) {
	s.message(w, r, "follow up on", (*agent.Agent).FollowUp)
}

// message delivers a steer or follow-up to the running turn.
func (s *Server) message(w http.ResponseWriter, r *http.Request, what string, send func(*agent.Agent, ...llm.Part) bool) {
	var body MessageRequest
	l, ok := s.textRequest(w, r, &body, &body.Message, "empty_message", `the message is empty; send {"message": "…"}`)
	if !ok {
		return
	}
	a, running := l.current()
	if !running || !send(a, &llm.Text{Text: body.Message}) {
		noTurn(w, what)
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]bool{"queued": true})
}

// cancelRequest reads a cancel's optional reason and finds the running
// turn's agent, answering the errors.
func (s *Server) cancelRequest(w http.ResponseWriter, r *http.Request) (*agent.Agent, string, bool) {
	var body ReasonRequest
	if !decodeBody(w, r, &body, true) {
		return nil, "", false
	}
	l, ok := s.liveSession(w, r)
	if !ok {
		return nil, "", false
	}
	a, running := l.current()
	if !running {
		noTurn(w, "cancel")
	}
	return a, body.Reason, running
}

func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	a, reason, ok := s.cancelRequest(w, r)
	if !ok {
		return
	}
	if !a.Cancel(cmp.Or(reason, "user")) {
		noTurn(w, "cancel")
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]bool{"cancelled": true})
}

func (s *Server) cancelTool(w http.ResponseWriter, r *http.Request) {
	a, reason, ok := s.cancelRequest(w, r)
	if !ok {
		return
	}
	callID := llm.CallID(r.PathValue("call_id"))
	switch err := a.CancelTool(callID, cmp.Or(reason, "cancelled by the user")); {
	case errors.Is(err, agent.ErrCallFinished):
		writeError(w, http.StatusConflict, "call_finished", fmt.Sprintf("call %s already has its result; nothing to cancel", callID))
	case errors.Is(err, agent.ErrIdle):
		noTurn(w, "cancel")
	case err != nil:
		writeError(w, http.StatusInternalServerError, "cancel_failed", err.Error())
	default:
		writeJSON(w, http.StatusAccepted, map[string]bool{"cancelled": true})
	}
}

func (s *Server) approve(w http.ResponseWriter, r *http.Request) {
	var body ApprovalDecision
	if !decodeBody(w, r, &body, false) {
		return
	}
	var a tool.Approval
	switch body.Decision {
	case "allow":
		a = tool.Approval{Verdict: tool.Allow, Reason: cmp.Or(body.Reason, "approved through the API")}
	case "always":
		a = tool.Approval{Verdict: tool.Allow, Always: true, Reason: cmp.Or(body.Reason, "approved for the session through the API")}
	case "deny":
		a = tool.Approval{Verdict: tool.Deny, Reason: cmp.Or(body.Reason, "denied through the API")}
	default:
		writeError(w, http.StatusBadRequest, "bad_decision", fmt.Sprintf(`decision %q: send {"decision": "allow"}, "deny" or "always"`, body.Decision))
		return
	}
	id, ok := sessionID(w, r)
	if !ok {
		return
	}
	callID := llm.CallID(r.PathValue("call_id"))
	l := s.peek(id)
	if l == nil || !l.decide(callID, a) {
		if _, err := s.opts.Store.Info(r.Context(), id); err != nil {
			writeStoreError(w, id, err)
			return
		}
		writeError(w, http.StatusNotFound, "not_waiting", fmt.Sprintf("no call %s is waiting for approval in this session; GET /v1/sessions/%s lists the waiting ones", callID, id))
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"decision": body.Decision})
}
