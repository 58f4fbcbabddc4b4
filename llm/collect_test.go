package llm_test

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
)

func TestCollect(t *testing.T) {
	req := &llm.Request{Model: "m", Messages: []llm.Message{llm.UserText("hi")}}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	boom := &llm.ProviderError{Kind: llm.ErrServer, Provider: "p"}
	tests := []struct {
		name    string
		ctx     context.Context
		entry   llmtest.Entry
		want    *llm.Response
		wantErr error
	}{
		{
			name:  "whole",
			ctx:   context.Background(),
			entry: llmtest.CallTool("c", "echo", `{}`),
			want: &llm.Response{
				Message: llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{&llm.ToolCall{ID: "c", Name: "echo", Args: []byte(`{}`)}},
					Provenance: &llm.Provenance{Provider: "llmtest", Model: "m"}},
				Usage: llmtest.DefaultUsage, Finish: llm.FinishToolCalls,
			},
		},
		{
			name: "error keeps partial text, drops calls",
			ctx:  context.Background(),
			entry: llmtest.FailAfter(boom,
				&llm.TextDelta{Index: 0, Text: "half"},
				&llm.ToolCallDelta{Index: 1, ID: "c", Name: "n", Args: `{}`},
				&llm.UsageChunk{Usage: llm.Usage{Input: 3}}),
			want: &llm.Response{
				Message: llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{&llm.Text{Text: "half"}}},
				Usage:   llm.Usage{Input: 3}, Finish: llm.FinishError,
			},
			wantErr: boom,
		},
		{
			name:    "cancelled",
			ctx:     cancelled,
			entry:   llmtest.Hang(),
			want:    &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{}}, Finish: llm.FinishAborted},
			wantErr: context.Canceled,
		},
		{
			name:    "cut",
			ctx:     context.Background(),
			entry:   llmtest.Cut(&llm.TextDelta{Text: "dropped"}),
			want:    &llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{&llm.Text{Text: "dropped"}}}, Finish: llm.FinishAborted},
			wantErr: llm.ErrIncomplete,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := llmtest.NewModel(tt.entry)
			got, err := llm.Collect(m.Stream(tt.ctx, req))
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Errorf("err = %v, want %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}
