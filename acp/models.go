package acp

import (
	"context"
	"errors"
	"slices"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/reinhq/rein/session"
)

// modelOption is the id of the session config option that picks the model.
const modelOption = "model"

// configOptions returns the session's config options: the model, when the
// host offers models to choose from.
func (s *Server) configOptions(current string) []sdk.SessionConfigOption {
	if len(s.opts.Models) == 0 || current == "" {
		return nil
	}
	choices := s.opts.Models
	if !slices.Contains(choices, current) {
		choices = append([]string{current}, choices...)
	}
	opts := make(sdk.SessionConfigSelectOptionsUngrouped, 0, len(choices))
	for _, m := range choices {
		opts = append(opts, sdk.SessionConfigSelectOption{Name: m, Value: sdk.SessionConfigValueId(m)})
	}
	return []sdk.SessionConfigOption{{Select: &sdk.SessionConfigOptionSelect{
		Id: modelOption, Name: "Model", Type: "select",
		Category:     sdk.Ptr(sdk.SessionConfigOptionCategoryModel),
		CurrentValue: sdk.SessionConfigValueId(current),
		Options:      sdk.SessionConfigSelectOptions{Ungrouped: &opts},
	}}}
}

// SetSessionConfigOption switches the session's model between prompts:
// the agent is built again on the same session with the chosen model.
func (s *Server) SetSessionConfigOption(ctx context.Context, p sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	v := p.ValueId
	if v == nil || v.ConfigId != modelOption || len(s.opts.Models) == 0 {
		return sdk.SetSessionConfigOptionResponse{}, invalidParams("rein offers only the %q option, and only when started with models to choose from", modelOption)
	}
	model := string(v.Value)
	l, err := s.lookup(v.SessionId)
	if err != nil {
		return sdk.SetSessionConfigOptionResponse{}, err
	}
	if !slices.Contains(s.opts.Models, model) && model != l.model() {
		return sdk.SetSessionConfigOptionResponse{}, invalidParams("model %q is not offered; choose one of %s", model, strings.Join(s.opts.Models, ", "))
	}
	if !s.begin() {
		return sdk.SetSessionConfigOptionResponse{}, errClosing
	}
	defer s.work.Done()
	if !l.claim() {
		return sdk.SetSessionConfigOptionResponse{}, invalidParams("a prompt is running in this session; change the model when it has answered")
	}
	defer l.release()
	if model != l.model() {
		if err := s.rebuild(ctx, l, model); err != nil {
			return sdk.SetSessionConfigOptionResponse{}, err
		}
	}
	return sdk.SetSessionConfigOptionResponse{ConfigOptions: s.configOptions(l.model())}, nil
}

// rebuild closes the session's agent and builds it again with model; when
// that fails, it builds it with the model it had.
func (s *Server) rebuild(ctx context.Context, l *live, model string) error {
	old := l.handle()
	if err := old.close(); err != nil {
		s.log.Warn("acp: close the agent to change its model", "session", l.id, "err", err)
	}
	h, err := s.build(ctx, l, session.ID(l.id), model)
	if err == nil {
		l.setHandle(h)
		return nil
	}
	back, berr := s.build(ctx, l, session.ID(l.id), old.Model)
	if berr != nil {
		s.mu.Lock()
		delete(s.sessions, l.id)
		s.mu.Unlock()
		return internalError("switch to model %s: %v; and the session could not be opened again (%v): load it again", model, err, berr)
	}
	l.setHandle(back)
	return internalError("switch to model %s: %v; the session goes on with %s", model, err, old.Model)
}

// build asks the host for the agent of l's session with model.
func (s *Server) build(ctx context.Context, l *live, id session.ID, model string) (*Handle, error) {
	s.mu.Lock()
	client := s.client
	s.mu.Unlock()
	h, err := s.opts.NewAgent(ctx, &AgentRequest{
		Session: id, Cwd: l.cwd, MCPServers: l.mcps, Client: client, Model: model,
		Approver: l.approver, srv: s, live: l,
	})
	if err != nil {
		var re *sdk.RequestError
		if errors.As(err, &re) {
			return nil, re
		}
		return nil, internalError("start the agent: %v", err)
	}
	if h == nil || h.Agent == nil {
		return nil, internalError("start the agent: the host returned no agent")
	}
	return h, nil
}
