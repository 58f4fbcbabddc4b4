package mcp

import (
	"context"
	"errors"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/llm"
)

// ErrSamplingDenied is a sampling request the host's approval refused.
var ErrSamplingDenied = errors.New("mcp: the request for a completion was denied")

// SamplingOptions lets servers ask the host's model for a completion
// (sampling/createMessage). Every request goes through Approve first.
type SamplingOptions struct {
	// Model answers the requests; ModelName is the name servers are told
	// answered.
	Model     llm.Model
	ModelName string
	// Approve decides each request; nil denies them all. An error fails
	// the request.
	Approve func(ctx context.Context, req *SampleRequest) (bool, error)
	// MaxTokens caps a request's maxTokens; zero means 4096.
	MaxTokens int
	// Cost prices a completion's usage in USD for the Sampled event; nil
	// records no cost.
	Cost func(llm.Usage) float64
}

// SampleRequest is a server's request for a completion, as the model
// would receive it.
type SampleRequest struct {
	Server string
	// Request is what would be sent to the model: the server's system
	// prompt and messages, its temperature and stop sequences, and
	// MaxTokens after the cap.
	Request *llm.Request
}

// sample answers one sampling/createMessage request, recording it as a
// *Sampled event.
func (s *server) sample(ctx context.Context, req *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
	opts := s.m.opts.Sampling
	ev := &Sampled{Server: s.cfg.Name, Model: opts.ModelName}
	start := time.Now()
	res, err := s.sampleOnce(ctx, opts, req.Params, ev)
	ev.Duration = time.Since(start)
	ev.Err = err
	s.m.emit(ev)
	if err != nil {
		return nil, answerError(err)
	}
	return res, nil
}

func (s *server) sampleOnce(ctx context.Context, opts *SamplingOptions, p *sdk.CreateMessageParams, ev *Sampled) (*sdk.CreateMessageResult, error) {
	lr, err := samplingRequest(opts, p)
	if err != nil {
		return nil, err
	}
	ev.MaxTokens, ev.Messages = lr.MaxTokens, len(lr.Messages)
	for _, m := range lr.Messages {
		ev.Prompt = append(ev.Prompt, string(m.Role)+": "+m.Text())
	}
	if len(lr.System) > 0 {
		ev.System = lr.System[0].Text
	}
	sr := &SampleRequest{Server: s.cfg.Name, Request: lr}
	ok := false
	if opts.Approve != nil {
		if ok, err = opts.Approve(ctx, sr); err != nil {
			return nil, fmt.Errorf("mcp: approving a completion for server %q: %w", s.cfg.Name, err)
		}
	}
	ev.Approved = ok
	if !ok {
		return nil, fmt.Errorf("%w (server %q)", ErrSamplingDenied, s.cfg.Name)
	}
	resp, err := llm.Collect(opts.Model.Stream(ctx, lr))
	if resp != nil {
		ev.Usage = resp.Usage
		if opts.Cost != nil {
			ev.Cost = opts.Cost(resp.Usage)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("mcp: the completion for server %q failed: %w", s.cfg.Name, err)
	}
	ev.Finish = string(resp.Finish)
	stop := "endTurn"
	switch resp.Finish {
	case llm.FinishMaxTokens:
		stop = "maxTokens"
	case llm.FinishStop:
	default:
		stop = string(resp.Finish)
	}
	return &sdk.CreateMessageResult{Content: &sdk.TextContent{Text: resp.Message.Text()}, Model: opts.ModelName, Role: "assistant", StopReason: stop}, nil
}

// samplingRequest converts a server's request to the model's.
func samplingRequest(opts *SamplingOptions, p *sdk.CreateMessageParams) (*llm.Request, error) {
	limit := opts.MaxTokens
	if limit <= 0 {
		limit = 4096
	}
	lr := &llm.Request{Model: opts.ModelName, MaxTokens: min(int(p.MaxTokens), limit), Stop: p.StopSequences}
	if lr.MaxTokens <= 0 {
		lr.MaxTokens = limit
	}
	if p.Temperature != 0 {
		t := p.Temperature
		lr.Temperature = &t
	}
	if p.SystemPrompt != "" {
		lr.System = []llm.Text{{Text: p.SystemPrompt}}
	}
	for i, m := range p.Messages {
		var part llm.Part
		switch c := m.Content.(type) {
		case *sdk.TextContent:
			part = &llm.Text{Text: c.Text}
		case *sdk.ImageContent:
			part = &llm.Image{MediaType: c.MIMEType, Data: c.Data}
		default:
			return nil, fmt.Errorf("mcp: sampling message %d: content of type %T is not supported; send text or images", i+1, m.Content)
		}
		role := llm.RoleUser
		if m.Role == "assistant" {
			role = llm.RoleAssistant
		}
		lr.Messages = append(lr.Messages, llm.Message{Role: role, Parts: []llm.Part{part}})
	}
	if len(lr.Messages) == 0 {
		return nil, errors.New("mcp: a sampling request needs at least one message")
	}
	return lr, nil
}
