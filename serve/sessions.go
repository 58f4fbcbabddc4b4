package serve

import (
	"cmp"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// CreateSession is the body of POST /v1/sessions; every field is optional.
type CreateSession struct {
	// Model is PROVIDER/NAME; empty is the server's default.
	Model string `json:"model,omitempty"`
	// Tools names the tools; absent is the server's default, [] none.
	Tools *[]string `json:"tools,omitempty"`
	// Cwd is the working directory, relative to the server's workspace
	// root or absolute inside it.
	Cwd    string `json:"cwd,omitempty"`
	Limits struct {
		MaxSteps int     `json:"max_steps,omitempty"`
		MaxCost  float64 `json:"max_cost,omitempty"`
	} `json:"limits,omitzero"`
}

// Session is a session as the API shows it.
type Session struct {
	ID      session.ID `json:"id"`
	Title   string     `json:"title"`
	Created time.Time  `json:"created"`
	Updated time.Time  `json:"updated"`
	LastSeq int64      `json:"last_seq"`
	Cwd     string     `json:"cwd,omitempty"`
	Parent  session.ID `json:"parent,omitempty"`
	Model   string     `json:"model,omitempty"`
	Running bool       `json:"running"`
	// Waiting lists the calls waiting for approval.
	Waiting []Waiting `json:"waiting,omitempty"`
}

// SessionList is a page of GET /v1/sessions, newest first.
type SessionList struct {
	Sessions []Session `json:"sessions"`
	// Next is the cursor of the next page; empty on the last.
	Next string `json:"next,omitempty"`
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request) {
	var body CreateSession
	if !decodeBody(w, r, &body, true) {
		return
	}
	cwd, err := s.resolveCwd(body.Cwd)
	if err != nil {
		writeError(w, http.StatusBadRequest, "bad_cwd", err.Error())
		return
	}
	if body.Limits.MaxSteps < 0 || body.Limits.MaxCost < 0 {
		writeError(w, http.StatusBadRequest, "bad_limits", "limits.max_steps and limits.max_cost must be positive, or left out for the server's defaults")
		return
	}
	meta := map[string]string{}
	if body.Model != "" {
		meta[MetaModel] = body.Model
	}
	if body.Tools != nil {
		meta[MetaTools] = "none"
		if len(*body.Tools) > 0 {
			meta[MetaTools] = strings.Join(*body.Tools, ",")
		}
	}
	if body.Limits.MaxSteps > 0 {
		meta[MetaMaxSteps] = strconv.Itoa(body.Limits.MaxSteps)
	}
	if body.Limits.MaxCost > 0 {
		meta[MetaMaxCost] = strconv.FormatFloat(body.Limits.MaxCost, 'f', -1, 64)
	}
	ctx := r.Context()
	id, err := s.opts.Store.Create(ctx, &session.CreateRequest{WorkDir: cwd, Meta: meta})
	if err != nil {
		writeStoreError(w, "", err)
		return
	}
	if _, err := s.session(ctx, id); err != nil {
		_ = s.opts.Store.Delete(context.WithoutCancel(ctx), id)
		if l := s.peek(id); l != nil {
			s.remove(l)
		}
		writeAgentError(w, err)
		return
	}
	view, err := s.view(ctx, id)
	if err != nil {
		writeStoreError(w, id, err)
		return
	}
	w.Header().Set("Location", "/v1/sessions/"+string(id))
	writeJSON(w, http.StatusCreated, view)
}

// writeAgentError answers a failed NewAgent.
func writeAgentError(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, ErrBadRequest):
		writeError(w, http.StatusBadRequest, "bad_session_options", strings.TrimPrefix(err.Error(), ErrBadRequest.Error()+": "))
	case errors.Is(err, errServerClosed):
		writeError(w, http.StatusServiceUnavailable, "shutting_down", "the server is shutting down; try again after its next start")
	default:
		writeError(w, http.StatusInternalServerError, "agent_error", "the agent could not start: "+err.Error()+"; check the server's model and tool configuration")
	}
}

// resolveCwd turns a requested cwd into an absolute directory inside the
// workspace root.
func (s *Server) resolveCwd(cwd string) (string, error) {
	if cwd == "" {
		return s.root, nil
	}
	p := cwd
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.root, p)
	}
	p, err := filepath.EvalSymlinks(filepath.Clean(p))
	if err != nil {
		return "", fmt.Errorf("cwd %q: %v; give a directory inside the server's workspace %s", cwd, errors.Unwrap(err), s.root)
	}
	rel, err := filepath.Rel(s.root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("cwd %q is outside the server's workspace %s; give a directory inside it", cwd, s.root)
	}
	if st, err := os.Stat(p); err != nil || !st.IsDir() {
		return "", fmt.Errorf("cwd %q is not a directory; give a directory inside the server's workspace %s", cwd, s.root)
	}
	return p, nil
}

// view describes a session.
func (s *Server) view(ctx context.Context, id session.ID) (*Session, error) {
	info, err := s.opts.Store.Info(ctx, id)
	if err != nil {
		return nil, err
	}
	v := s.summarize(ctx, info)
	if l := s.peek(id); l != nil {
		v.Running, v.Waiting = l.status()
	}
	return &v, nil
}

func (s *Server) summarize(ctx context.Context, info *session.Info) Session {
	return Session{
		ID: info.ID, Title: s.title(ctx, info), Created: info.Created, Updated: info.Updated,
		LastSeq: info.LastSeq, Cwd: info.WorkDir, Parent: info.Parent, Model: info.Meta[MetaModel],
	}
}

// title is the session's title: its metadata, else the start of its first
// prompt, read from the head of the log only.
func (s *Server) title(ctx context.Context, info *session.Info) string {
	if t := info.Meta[MetaTitle]; t != "" {
		return t
	}
	n := 0
	for ev, err := range s.opts.Store.Events(ctx, info.ID, 0) {
		if err != nil || n > 20 {
			break
		}
		n++
		if um, ok := ev.Data.(*session.UserMessage); ok {
			return titleOf(um.Parts)
		}
	}
	return ""
}

// titleOf is the first line of a prompt, cut to 80 characters.
func titleOf(parts []llm.Part) string {
	for _, p := range parts {
		if t, ok := p.(*llm.Text); ok {
			line, _, _ := strings.Cut(strings.TrimSpace(t.Text), "\n")
			if r := []rune(line); len(r) > 80 {
				line = string(r[:79]) + "…"
			}
			if line != "" {
				return line
			}
		}
	}
	return ""
}

func (s *Server) getSession(w http.ResponseWriter, r *http.Request) {
	id, ok := sessionID(w, r)
	if !ok {
		return
	}
	v, err := s.view(r.Context(), id)
	if err != nil {
		writeStoreError(w, id, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) listSessions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	limit := 50
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 500 {
			writeError(w, http.StatusBadRequest, "bad_limit", fmt.Sprintf("limit %q: give a number from 1 to 500", v))
			return
		}
		limit = n
	}
	infos, err := s.opts.Store.List(r.Context())
	if err != nil {
		writeStoreError(w, "", err)
		return
	}
	newest := func(a, b session.Info) int {
		return cmp.Or(b.Updated.Compare(a.Updated), cmp.Compare(b.ID, a.ID))
	}
	slices.SortFunc(infos, newest)
	start := 0
	if c := q.Get("cursor"); c != "" {
		at, ok := parseCursor(c)
		if !ok {
			writeError(w, http.StatusBadRequest, "bad_cursor", "cursor is not one this server gave; start again without it")
			return
		}
		start, _ = slices.BinarySearchFunc(infos, at, newest)
		if start < len(infos) && infos[start].ID == at.ID {
			start++
		}
	}
	out := SessionList{Sessions: []Session{}}
	for i := start; i < len(infos) && len(out.Sessions) < limit; i++ {
		v := s.summarize(r.Context(), &infos[i])
		if l := s.peek(infos[i].ID); l != nil {
			v.Running, v.Waiting = l.status()
		}
		out.Sessions = append(out.Sessions, v)
		if len(out.Sessions) == limit && i+1 < len(infos) {
			out.Next = cursor(infos[i])
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// cursor encodes a listing position: the last item's update time and id.
func cursor(in session.Info) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(in.Updated.UnixNano(), 10) + " " + string(in.ID)))
}

func parseCursor(c string) (session.Info, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return session.Info{}, false
	}
	ns, id, ok := strings.Cut(string(b), " ")
	n, err := strconv.ParseInt(ns, 10, 64)
	if !ok || err != nil {
		return session.Info{}, false
	}
	return session.Info{ID: session.ID(id), Updated: time.Unix(0, n)}, true
}

func (s *Server) deleteSession(w http.ResponseWriter, r *http.Request) {
	id, ok := sessionID(w, r)
	if !ok {
		return
	}
	ctx := r.Context()
	if _, err := s.opts.Store.Info(ctx, id); err != nil {
		writeStoreError(w, id, err)
		return
	}
	if l := s.peek(id); l != nil {
		if err := l.shut(); err != nil {
			s.log.Warn("serve: closing a deleted session's agent", "session", id, "err", err)
		}
		s.remove(l)
	}
	if err := s.opts.Store.Delete(ctx, id); err != nil {
		writeStoreError(w, id, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
