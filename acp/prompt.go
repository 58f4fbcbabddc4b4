package acp

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/mcp"
	"github.com/reinhq/rein/session"
)

// Prompt runs one turn of the session's agent, streaming its updates, and
// answers with the turn's stop reason.
func (s *Server) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	l, err := s.lookup(p.SessionId)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	parts, err := promptParts(p.Prompt)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	if !s.begin() {
		return sdk.PromptResponse{}, errClosing
	}
	defer s.work.Done()
	if !l.claim() {
		return sdk.PromptResponse{}, invalidParams("a prompt is already running in this session (or its model is being changed); wait for its answer or send session/cancel")
	}
	defer l.release()
	h := l.handle()
	if ctx.Err() != nil {
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	}
	// The run has its own context: a cancel goes through the agent, so the
	// log records who cancelled and the turn is closed cleanly.
	stop := context.AfterFunc(ctx, func() { h.Agent.Cancel("user") })
	defer stop()
	var (
		end    *session.TurnEnd
		finish llm.FinishReason
		runErr error
	)
	first := true
	for ev, err := range h.Agent.Stream(context.WithoutCancel(ctx), &agent.RunRequest{Parts: parts, Hooks: h.RunHooks}) {
		if err != nil {
			runErr = err
			break
		}
		if first && ctx.Err() != nil {
			// A cancel that came before the run was in flight.
			h.Agent.Cancel("user")
		}
		first = false
		l.tr.event(ev)
		switch d := ev.Data.(type) {
		case *session.TurnEnd:
			end = d
		case *session.AssistantMessage:
			finish = d.Finish
		}
	}
	reason, err := stopReason(end, finish, runErr)
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	return sdk.PromptResponse{StopReason: reason}, nil
}

// stopReason maps how a turn ended onto the protocol's stop reasons; a
// failed turn is an error that says why.
func stopReason(end *session.TurnEnd, finish llm.FinishReason, runErr error) (sdk.StopReason, error) {
	if end == nil {
		if errors.Is(runErr, agent.ErrBusy) {
			return "", invalidParams("a prompt is already running in this session; wait for its answer or send session/cancel")
		}
		if runErr == nil {
			runErr = errors.New("the turn ended without a record of why")
		}
		return "", internalError("the prompt failed: %v", runErr)
	}
	switch end.Reason {
	case session.EndCompleted:
		if finish == llm.FinishFiltered {
			return sdk.StopReasonRefusal, nil
		}
		return sdk.StopReasonEndTurn, nil
	case session.EndMaxTokens:
		return sdk.StopReasonMaxTokens, nil
	case session.EndMaxSteps, session.EndBudget:
		return sdk.StopReasonMaxTurnRequests, nil
	case session.EndBlocked:
		return sdk.StopReasonRefusal, nil
	case session.EndAborted, session.EndInterrupted:
		return sdk.StopReasonCancelled, nil
	}
	msg := end.Message
	if msg == "" && runErr != nil {
		msg = runErr.Error()
	}
	if msg == "" {
		msg = string(end.Reason)
	}
	return "", internalError("the turn ended in error: %s", msg)
}

// promptParts turns the prompt's content blocks into message parts.
func promptParts(blocks []sdk.ContentBlock) ([]llm.Part, error) {
	var parts []llm.Part
	for i, b := range blocks {
		p, err := blockPart(b)
		if err != nil {
			return nil, invalidParams("prompt[%d]: %v", i, err)
		}
		if p != nil {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return nil, invalidParams("the prompt is empty; send at least one text block")
	}
	return parts, nil
}

func blockPart(b sdk.ContentBlock) (llm.Part, error) {
	switch {
	case b.Text != nil:
		if strings.TrimSpace(b.Text.Text) == "" {
			return nil, nil
		}
		return &llm.Text{Text: b.Text.Text}, nil
	case b.ResourceLink != nil:
		r := b.ResourceLink
		return &llm.Text{Text: fmt.Sprintf("<resource_link name=%q uri=%q/>", r.Name, r.Uri)}, nil
	case b.Resource != nil:
		return resourcePart(b.Resource.Resource)
	case b.Image != nil:
		img := b.Image
		if img.Data == "" {
			if img.Uri != nil && *img.Uri != "" {
				return &llm.Image{URL: *img.Uri}, nil
			}
			return nil, errors.New("an image block needs data or a uri")
		}
		data, err := base64.StdEncoding.DecodeString(img.Data)
		if err != nil {
			return nil, fmt.Errorf("image data is not base64: %v", err)
		}
		return &llm.Image{MediaType: img.MimeType, Data: data}, nil
	case b.Audio != nil:
		return nil, errors.New("rein takes no audio (promptCapabilities.audio is false); send text")
	}
	return nil, errors.New("an empty content block; send text, an image or a resource")
}

func resourcePart(r sdk.EmbeddedResourceResource) (llm.Part, error) {
	switch {
	case r.TextResourceContents != nil:
		t := r.TextResourceContents
		return &llm.Text{Text: fmt.Sprintf("<resource uri=%q>\n%s\n</resource>", t.Uri, t.Text)}, nil
	case r.BlobResourceContents != nil:
		b := r.BlobResourceContents
		data, err := base64.StdEncoding.DecodeString(b.Blob)
		if err != nil {
			return nil, fmt.Errorf("resource %s: blob is not base64: %v", b.Uri, err)
		}
		mime := ""
		if b.MimeType != nil {
			mime = *b.MimeType
		}
		if strings.HasPrefix(mime, "image/") {
			return &llm.Image{MediaType: mime, Data: data}, nil
		}
		return &llm.Document{MediaType: mime, Data: data, Title: b.Uri}, nil
	}
	return nil, errors.New("an embedded resource needs text or a blob")
}

// mcpConfigs turns the editor's MCP servers into rein's configurations.
// The editor's values are literal, so "$" is escaped for mcp's templates:
// a value cannot pull one of rein's environment variables in.
func mcpConfigs(servers []sdk.McpServer) ([]mcp.ServerConfig, error) {
	lit := func(s string) string { return strings.ReplaceAll(s, "$", "$$") }
	var out []mcp.ServerConfig
	for i, srv := range servers {
		var c mcp.ServerConfig
		switch {
		case srv.Stdio != nil:
			c = mcp.ServerConfig{Name: srv.Stdio.Name, Command: lit(srv.Stdio.Command)}
			for _, a := range srv.Stdio.Args {
				c.Args = append(c.Args, lit(a))
			}
			for _, e := range srv.Stdio.Env {
				if c.Env == nil {
					c.Env = map[string]string{}
				}
				c.Env[e.Name] = lit(e.Value)
			}
		case srv.Http != nil:
			c = mcp.ServerConfig{Name: srv.Http.Name, URL: lit(srv.Http.Url), Headers: headers(srv.Http.Headers, lit)}
		case srv.Sse != nil:
			c = mcp.ServerConfig{Name: srv.Sse.Name, URL: lit(srv.Sse.Url), SSE: true, Headers: headers(srv.Sse.Headers, lit)}
		default:
			return nil, invalidParams("mcpServers[%d]: rein connects MCP servers over stdio, http and sse only", i)
		}
		if strings.TrimSpace(c.Name) == "" {
			return nil, invalidParams("mcpServers[%d]: the server needs a name", i)
		}
		out = append(out, c)
	}
	return out, nil
}

func headers(hs []sdk.HttpHeader, lit func(string) string) map[string]string {
	if len(hs) == 0 {
		return nil
	}
	m := make(map[string]string, len(hs))
	for _, h := range hs {
		m[h.Name] = lit(h.Value)
	}
	return m
}
