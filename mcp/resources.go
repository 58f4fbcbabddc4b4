package mcp

import (
	"context"
	"fmt"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Resources lists a server's resources, for hosts.
func (m *Manager) Resources(ctx context.Context, server string) ([]*sdk.Resource, error) {
	cs, err := m.session(ctx, server)
	if err != nil {
		return nil, err
	}
	var out []*sdk.Resource
	for r, err := range cs.Resources(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcp: server %q: listing resources: %w", server, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// ReadResource reads one resource of a server, for hosts.
func (m *Manager) ReadResource(ctx context.Context, server, uri string) (*sdk.ReadResourceResult, error) {
	cs, err := m.session(ctx, server)
	if err != nil {
		return nil, err
	}
	res, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
	if err != nil {
		return nil, fmt.Errorf("mcp: server %q: reading %s: %w", server, uri, err)
	}
	return res, nil
}

// Prompts lists a server's prompts, for hosts.
func (m *Manager) Prompts(ctx context.Context, server string) ([]*sdk.Prompt, error) {
	cs, err := m.session(ctx, server)
	if err != nil {
		return nil, err
	}
	var out []*sdk.Prompt
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcp: server %q: listing prompts: %w", server, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// GetPrompt renders one prompt of a server, for hosts.
func (m *Manager) GetPrompt(ctx context.Context, server, name string, args map[string]string) (*sdk.GetPromptResult, error) {
	cs, err := m.session(ctx, server)
	if err != nil {
		return nil, err
	}
	res, err := cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("mcp: server %q: prompt %s: %w", server, name, err)
	}
	return res, nil
}

func (m *Manager) session(ctx context.Context, server string) (*sdk.ClientSession, error) {
	s, err := m.server(server)
	if err != nil {
		return nil, err
	}
	if s.cfg.Auth != nil {
		h, err := m.authHeaders(ctx, s, "")
		if err != nil {
			return nil, err
		}
		ctx = context.WithValue(ctx, headersKey{}, h)
	}
	return s.ensure(ctx)
}
