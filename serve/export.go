package serve

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/session"
)

// export serves GET …/export: the log as NDJSON (the default, for
// 'rein replay' and import) or, with ?format=markdown, a transcript.
func (s *Server) export(w http.ResponseWriter, r *http.Request) {
	id, ok := sessionID(w, r)
	if !ok {
		return
	}
	format := r.URL.Query().Get("format")
	if format == "" && strings.Contains(r.Header.Get("Accept"), "text/markdown") {
		format = "markdown"
	}
	ctx := r.Context()
	if _, err := s.opts.Store.Info(ctx, id); err != nil {
		writeStoreError(w, id, err)
		return
	}
	switch format {
	case "", "ndjson":
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.ndjson"`, id))
		if err := session.Export(ctx, s.opts.Store, id, w); err != nil {
			s.log.Warn("serve: export", "session", id, "err", err)
		}
	case "markdown", "md":
		if s.opts.Markdown == nil {
			writeError(w, http.StatusNotImplemented, "no_markdown", "this server renders no Markdown; ask for format=ndjson")
			return
		}
		events, err := s.readAll(r, id)
		if err != nil {
			writeStoreError(w, id, err)
			return
		}
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s.md"`, id))
		bw := bufio.NewWriter(w)
		if err := s.opts.Markdown(bw, events); err != nil {
			s.log.Warn("serve: markdown export", "session", id, "err", err)
		}
		_ = bw.Flush()
	default:
		writeError(w, http.StatusBadRequest, "bad_format", fmt.Sprintf("format %q: use ndjson (the default) or markdown", format))
	}
}

// summary serves GET …/summary: the session's run summary, cost by model.
func (s *Server) summary(w http.ResponseWriter, r *http.Request) {
	id, ok := sessionID(w, r)
	if !ok {
		return
	}
	events, err := s.readAll(r, id)
	if err != nil {
		writeStoreError(w, id, err)
		return
	}
	var sum *agent.RunSummary
	if s.opts.Cost != nil {
		sum = agent.SummarizeCost(events, s.opts.Cost)
	} else {
		sum = agent.Summarize(events)
	}
	sum.Session = id
	writeJSON(w, http.StatusOK, sum)
}

func (s *Server) readAll(r *http.Request, id session.ID) ([]session.Event, error) {
	return session.Collect(s.opts.Store.Events(r.Context(), id, 0))
}
