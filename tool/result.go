package tool

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/reinhq/rein/llm"
)

// Errors callers branch on.
var (
	// ErrDuplicateName is a tool or alias name already in a Set.
	ErrDuplicateName = errors.New("tool: duplicate name")
	// ErrNotFound is a name no tool in a Set answers to.
	ErrNotFound = errors.New("tool: not found")
	// ErrInvalidName is a tool name the model providers would refuse.
	ErrInvalidName = errors.New("tool: invalid name; use 1 to 64 letters, digits, '_' or '-'")
)

// JSON returns a result holding v encoded as JSON text. A value that does
// not encode gives an error result saying so.
func JSON(v any) *Result {
	b, err := json.Marshal(v)
	if err != nil {
		return Errorf("Tool error: cannot encode the result as JSON: %v", err)
	}
	return Text(string(b))
}

// Image returns a result holding one inline image.
func Image(mediaType string, data []byte) *Result {
	return &Result{Parts: []llm.Part{&llm.Image{MediaType: mediaType, Data: data}}}
}

// TextOf concatenates the text parts of r, one per line.
func (r *Result) TextOf() string {
	if r == nil {
		return ""
	}
	var b strings.Builder
	n := 0
	for _, p := range r.Parts {
		if t, ok := p.(*llm.Text); ok {
			if n > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(t.Text)
			n++
		}
	}
	return b.String()
}

// WithMeta sets a host-only metadata key on r and returns r.
func (r *Result) WithMeta(key string, value any) *Result {
	if r.Meta == nil {
		r.Meta = make(map[string]any)
	}
	r.Meta[key] = value
	return r
}
