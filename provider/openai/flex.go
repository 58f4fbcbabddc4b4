package openai

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
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
		s, err := unquote(b)
		if err != nil {
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

// unquote decodes a JSON string. Stream deltas are short and rarely
// escaped, so the plain case is one allocation and no second parse.
func unquote(b []byte) (string, error) {
	if len(b) >= 2 && b[0] == '"' && b[len(b)-1] == '"' {
		inner := b[1 : len(b)-1]
		plain := true
		for _, c := range inner {
			if c == '\\' || c == '"' || c < 0x20 {
				plain = false
				break
			}
		}
		if plain && utf8.Valid(inner) {
			return string(inner), nil
		}
	}
	var s string
	err := json.Unmarshal(b, &s)
	return s, err
}

// knownString decodes a string field that repeats in every event (the
// model name) without allocating when it has not changed: dst holds the
// last value and is only replaced when the bytes differ.
type knownString struct{ dst *string }

// UnmarshalJSON implements json.Unmarshaler.
func (k knownString) UnmarshalJSON(b []byte) error {
	if k.dst == nil || len(b) < 2 || b[0] != '"' {
		return nil
	}
	if string(b[1:len(b)-1]) == *k.dst {
		return nil // the compiler compares without converting
	}
	s, err := unquote(b)
	if err == nil && s != "" {
		*k.dst = s
	}
	return nil
}
