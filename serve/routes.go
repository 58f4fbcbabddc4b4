package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/reinhq/rein/session"
)

// maxBody caps a request body; prompts are text, not uploads.
const maxBody = 4 << 20

// routes registers the API. Each path takes its methods from a table, so a
// wrong method gets a JSON 405 naming the right ones.
func (s *Server) routes() {
	const sess = "/v1/sessions/{id}"
	table := []struct {
		path    string
		methods map[string]http.HandlerFunc
	}{
		{"/v1/sessions", map[string]http.HandlerFunc{"GET": s.listSessions, "POST": s.createSession}},
		{sess, map[string]http.HandlerFunc{"GET": s.getSession, "DELETE": s.deleteSession}},
		{sess + "/turns", map[string]http.HandlerFunc{"POST": s.startTurn}},
		{sess + "/steer", map[string]http.HandlerFunc{"POST": s.steer}},
		{sess + "/follow-up", map[string]http.HandlerFunc{"POST": s.followUp}},
		{sess + "/cancel", map[string]http.HandlerFunc{"POST": s.cancel}},
		{sess + "/tools/{call_id}/cancel", map[string]http.HandlerFunc{"POST": s.cancelTool}},
		{sess + "/approvals/{call_id}", map[string]http.HandlerFunc{"POST": s.approve}},
		{sess + "/events", map[string]http.HandlerFunc{"GET": s.events}},
		{sess + "/export", map[string]http.HandlerFunc{"GET": s.export}},
		{sess + "/summary", map[string]http.HandlerFunc{"GET": s.summary}},
	}
	for _, rt := range table {
		s.mux.HandleFunc(rt.path, methods(rt.methods))
	}
	s.mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "not_found", fmt.Sprintf("no API route %s; the routes start with /v1/sessions", r.URL.Path))
	})
	s.mux.Handle("/", methods(map[string]http.HandlerFunc{"GET": pageHandler(), "HEAD": pageHandler()}))
}

func methods(m map[string]http.HandlerFunc) http.HandlerFunc {
	allow := make([]string, 0, len(m))
	for k := range m {
		allow = append(allow, k)
	}
	slices.Sort(allow)
	return func(w http.ResponseWriter, r *http.Request) {
		if h, ok := m[r.Method]; ok {
			h(w, r)
			return
		}
		w.Header().Set("Allow", strings.Join(allow, ", "))
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed",
			fmt.Sprintf("%s does not take %s; use %s", r.URL.Path, r.Method, strings.Join(allow, " or ")))
	}
}

// apiError is the body of every error answer.
type apiError struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// writeError answers with a JSON error: a code to branch on and a message
// that says what to do.
func writeError(w http.ResponseWriter, status int, code, msg string) {
	var e apiError
	e.Error.Code, e.Error.Message = code, msg
	writeJSON(w, status, e)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// decodeBody reads a JSON body into v; an empty body leaves v as it is
// when optional. Unknown fields are refused, so a typo is not silently
// ignored.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, optional bool) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if dec.More() {
			err = errors.New("more than one JSON value")
		}
	}
	if errors.Is(err, io.EOF) && optional {
		return true
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, "too_large", fmt.Sprintf("the body is over %d bytes; send a shorter one", maxBody))
			return false
		}
		if errors.Is(err, io.EOF) {
			err = errors.New("empty body")
		}
		writeError(w, http.StatusBadRequest, "bad_json", fmt.Sprintf("the body is not the JSON this route takes (%v); see rein serve --help for the fields", err))
		return false
	}
	return true
}

// sessionID reads and checks the {id} path value.
func sessionID(w http.ResponseWriter, r *http.Request) (session.ID, bool) {
	id := session.ID(r.PathValue("id"))
	if session.CheckID(id) != nil {
		writeNoSession(w, id)
		return "", false
	}
	return id, true
}

func writeNoSession(w http.ResponseWriter, id session.ID) {
	writeError(w, http.StatusNotFound, "session_not_found", fmt.Sprintf("no session %q; list them with GET /v1/sessions or create one with POST /v1/sessions", id))
}

// writeStoreError maps a store failure to an answer.
func writeStoreError(w http.ResponseWriter, id session.ID, err error) {
	if errors.Is(err, session.ErrNotFound) {
		writeNoSession(w, id)
		return
	}
	writeError(w, http.StatusInternalServerError, "store_error", "the session store failed: "+err.Error()+"; check the server's store and try again")
}
