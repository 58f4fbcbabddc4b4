package openai

import (
	"bytes"
	"encoding/json"
)

// flexText decodes a text field that servers send in several shapes: a
// string (OpenAI), null, or an array of typed parts (Mistral), of which the
// "text" parts are kept. Anything else decodes to "" rather than failing
// the whole chunk.
type flexText string

// UnmarshalJSON implements json.Unmarshaler.
func (f *flexText) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil
	}
	switch b[0] {
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*f = flexText(s)
	case '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(b, &parts) != nil {
			return nil
		}
		var s string
		for _, p := range parts {
			if p.Type == "" || p.Type == "text" {
				s += p.Text
			}
		}
		*f = flexText(s)
	case '{':
		var p struct {
			Text    string `json:"text"`
			Content string `json:"content"`
		}
		if json.Unmarshal(b, &p) == nil {
			*f = flexText(p.Text + p.Content)
		}
	}
	return nil
}

// flexInt decodes a count sent as a number, a float or a quoted number,
// and ignores anything else.
type flexInt int64

// UnmarshalJSON implements json.Unmarshaler.
func (n *flexInt) UnmarshalJSON(b []byte) error {
	b = bytes.Trim(bytes.TrimSpace(b), `"`)
	var f float64
	if json.Unmarshal(b, &f) == nil && f > 0 && f < 1e15 {
		*n = flexInt(f)
	}
	return nil
}
