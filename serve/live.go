package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// Metadata keys under which a session keeps the options it was created
// with, and its title.
const (
	MetaModel    = "model"
	MetaTools    = "tools"
	MetaMaxSteps = "max_steps"
	MetaMaxCost  = "max_cost"
	MetaTitle    = "title"
)

// errDeleted is the state of a live session whose session was deleted
// (or whose server closed); it wraps session.ErrNotFound.
var errDeleted = fmt.Errorf("serve: session deleted: %w", session.ErrNotFound)

// errServerClosed answers requests that arrive during Close.
var errServerClosed = errors.New("serve: the server is shutting down")

// live is a session the server holds an agent for.
type live struct {
	s  *Server
	id session.ID

	opening sync.Mutex // held while the agent is being built or closed

	mu      sync.Mutex
	agent   *agent.Agent
	handle  *Handle
	gone    bool
	evicted bool // dropped from the server's entries; take a new one
	running bool
	done    chan struct{} // closed when the turn in flight ends
	last    int64         // last seq the turn in flight has written
	pending []*pending    // calls waiting for approval, oldest first
	feed    *feed         // nil until a stream asks

	idleGen   int         // bumped whenever the session turns busy or idle
	idleTimer *time.Timer // the eviction armed last
}

// pending is a call waiting for an answer through the API.
type pending struct {
	req    *tool.ApprovalRequest
	since  time.Time
	answer chan tool.Approval // buffered: the first answer wins
}

// session returns the live session id, building its agent if need be.
func (s *Server) session(ctx context.Context, id session.ID) (*live, error) {
	for {
		l, err := s.entry(id)
		if err != nil {
			return nil, err
		}
		if again, err := l.open(ctx); !again {
			return l, err
		}
	}
}

// open builds l's agent unless it has one; again when l was evicted
// meanwhile and the caller must take a new entry.
func (l *live) open(ctx context.Context) (again bool, err error) {
	l.opening.Lock()
	defer l.opening.Unlock()
	l.mu.Lock()
	a, gone, evicted := l.agent, l.gone, l.evicted
	l.mu.Unlock()
	switch {
	case evicted:
		return true, nil
	case gone:
		return false, errDeleted
	case a != nil:
		return false, nil
	}
	s := l.s
	info, err := s.opts.Store.Info(ctx, l.id)
	if err != nil {
		return false, err
	}
	h, err := s.opts.NewAgent(ctx, s.request(info, l))
	if err != nil {
		return false, err
	}
	if h == nil || h.Agent == nil {
		return false, errors.New("serve: NewAgent returned no agent")
	}
	l.mu.Lock()
	l.agent, l.handle = h.Agent, h
	l.mu.Unlock()
	l.idle()
	return false, nil
}

// idle arms the eviction of l after Options.IdleTimeout: its agent is
// closed then unless a turn started in between, and the entry goes when
// no stream follows it either. The session stays in the store; the next
// request that needs the agent builds it again.
func (l *live) idle() {
	d := l.s.opts.IdleTimeout
	l.mu.Lock()
	defer l.mu.Unlock()
	l.idleGen++
	if d <= 0 || l.running || l.gone || l.evicted {
		return
	}
	gen := l.idleGen
	if l.idleTimer != nil {
		l.idleTimer.Stop()
	}
	l.idleTimer = time.AfterFunc(d, func() { l.evict(gen) })
}

// evict closes l's agent, and drops l when no stream follows it, if l has
// been idle since the gen-th change.
func (l *live) evict(gen int) {
	l.opening.Lock()
	defer l.opening.Unlock()
	l.mu.Lock()
	if gen != l.idleGen || l.running || l.gone {
		l.mu.Unlock()
		return
	}
	a, h := l.agent, l.handle
	l.agent, l.handle = nil, nil
	l.mu.Unlock()
	l.s.drop(l)
	if a != nil {
		l.s.log.Debug("serve: closing an idle session's agent", "session", l.id)
		if err := h.close(); err != nil {
			l.s.log.Warn("serve: closing an idle session's agent", "session", l.id, "err", err)
		}
	}
}

// entry returns the live entry of id, made without an agent if need be,
// so event streams can subscribe before a turn starts.
func (s *Server) entry(id session.ID) (*live, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.close {
		return nil, errServerClosed
	}
	l := s.live[id]
	if l == nil {
		l = &live{s: s, id: id}
		s.live[id] = l
	}
	return l, nil
}

// drop removes l from the entries, unless a stream has joined it
// meanwhile, and stops its feed.
func (s *Server) drop(l *live) {
	s.mu.Lock()
	l.mu.Lock()
	f := l.feed
	if f != nil && !f.idle() {
		l.mu.Unlock()
		s.mu.Unlock()
		return
	}
	l.evicted, l.feed = true, nil
	if s.live[l.id] == l {
		delete(s.live, l.id)
	}
	l.mu.Unlock()
	s.mu.Unlock()
	if f != nil {
		f.close()
	}
}

// remove drops the live entry of id after its session was deleted.
func (s *Server) remove(l *live) {
	s.mu.Lock()
	if s.live[l.id] == l {
		delete(s.live, l.id)
	}
	s.mu.Unlock()
}

// request rebuilds a session's creation options from its metadata.
func (s *Server) request(info *session.Info, l *live) *SessionRequest {
	req := &SessionRequest{Session: info.ID, Cwd: info.WorkDir, Model: info.Meta[MetaModel], Approver: l}
	if req.Cwd == "" {
		req.Cwd = s.root
	}
	if t, ok := info.Meta[MetaTools]; ok {
		req.Tools = []string{}
		if t != "" && t != "none" {
			req.Tools = strings.Split(t, ",")
		}
	}
	req.MaxSteps, _ = strconv.Atoi(info.Meta[MetaMaxSteps])
	req.MaxCost, _ = strconv.ParseFloat(info.Meta[MetaMaxCost], 64)
	return req
}

// shut cancels the turn in flight and closes the agent.
func (l *live) shut() error {
	l.opening.Lock()
	defer l.opening.Unlock()
	l.mu.Lock()
	a, h, f := l.agent, l.handle, l.feed
	l.gone = true
	l.agent, l.handle, l.feed = nil, nil, nil
	if l.idleTimer != nil {
		l.idleTimer.Stop()
	}
	l.mu.Unlock()
	if f != nil {
		f.close()
	}
	if a == nil {
		return nil
	}
	a.Cancel("server")
	return h.close()
}

// begin marks a turn as started; false when one is already running.
func (l *live) begin() (*Handle, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running || l.agent == nil {
		return nil, false
	}
	l.running = true
	l.idleGen++
	l.done = make(chan struct{})
	return l.handle, true
}

// current returns the agent when a turn is running.
func (l *live) current() (*agent.Agent, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.agent, l.running && l.agent != nil
}

// run drives one turn. Persisted events reach clients through the store;
// only the transient deltas are handed out here, without ever blocking.
func (l *live) run(a *agent.Agent, req *agent.RunRequest, last int64) {
	defer l.s.runs.Done()
	l.mu.Lock()
	l.last = last
	l.mu.Unlock()
	for ev, err := range a.Stream(l.s.ctx, req) {
		if err != nil {
			l.s.log.Debug("serve: turn ended with an error", "session", l.id, "err", err)
			break
		}
		if ev.Seq > 0 {
			l.mu.Lock()
			l.last = ev.Seq
			l.mu.Unlock()
			continue
		}
		b, err := ev.MarshalJSON()
		if err != nil {
			continue
		}
		l.publish(b)
	}
	l.mu.Lock()
	l.running = false
	close(l.done)
	l.mu.Unlock()
	l.idle()
}

// Approve implements tool.Approver: the call waits until a client answers
// through POST …/approvals/{call_id} or the turn ends.
func (l *live) Approve(ctx context.Context, req *tool.ApprovalRequest) (tool.Approval, error) {
	p := &pending{req: req, since: time.Now(), answer: make(chan tool.Approval, 1)}
	l.mu.Lock()
	l.pending = append(l.pending, p)
	l.mu.Unlock()
	defer l.drop(p)
	if b, err := json.Marshal(approvalEvent(l.id, p)); err == nil {
		l.publish(b)
	}
	select {
	case a := <-p.answer:
		return a, nil
	case <-ctx.Done():
		return tool.Approval{Verdict: tool.Deny, Reason: "the turn ended before anyone answered"}, ctx.Err()
	}
}

func (l *live) drop(p *pending) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, q := range l.pending {
		if q == p {
			l.pending = append(l.pending[:i], l.pending[i+1:]...)
			return
		}
	}
}

// decide answers a waiting call; false when no call id is waiting.
func (l *live) decide(id llm.CallID, a tool.Approval) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, p := range l.pending {
		if p.req.CallID == id {
			l.pending = append(l.pending[:i], l.pending[i+1:]...)
			p.answer <- a
			return true
		}
	}
	return false
}

// Waiting is a call waiting for approval, as the API shows it.
type Waiting struct {
	CallID  llm.CallID      `json:"call_id"`
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"args,omitempty"`
	Command string          `json:"command,omitempty"`
	Path    string          `json:"path,omitempty"`
	Reason  string          `json:"reason,omitempty"`
	Since   time.Time       `json:"since"`
}

func waiting(p *pending) Waiting {
	r := p.req
	return Waiting{CallID: r.CallID, Tool: r.Tool, Args: r.Args, Command: r.Command, Path: r.Path, Reason: r.Reason, Since: p.since}
}

// TypeApprovalRequest is the type of the transient event a stream carries
// when a call starts waiting for approval (and, for a client that
// connects, for each call still waiting). Like stream deltas it has seq 0
// and is never written to the log; the answer is the hook.decision event
// of point approval, or the call's tool.result.
const TypeApprovalRequest = "approval.request"

// transientEvent is the envelope of an event that is not on the log: the
// session event shape with seq 0.
type transientEvent struct {
	Seq     int64      `json:"seq"`
	Time    time.Time  `json:"time"`
	Session session.ID `json:"session"`
	Type    string     `json:"type"`
	Data    any        `json:"data"`
}

func approvalEvent(id session.ID, p *pending) transientEvent {
	return transientEvent{Time: p.since, Session: id, Type: TypeApprovalRequest, Data: waiting(p)}
}

// status is a snapshot of the live state for GET …/{id}.
func (l *live) status() (running bool, w []Waiting) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.pending {
		w = append(w, waiting(p))
	}
	return l.running, w
}

// peek returns the live entry of id, if any, without making one.
func (s *Server) peek(id session.ID) *live {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live[id]
}
