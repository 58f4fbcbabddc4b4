package tool

import (
	"bytes"
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"
)

// recordOrder sets PropertyOrder on s and its subschemas from the order
// the properties appear in raw, the schema's JSON text, so validation
// reports coercions and errors in the order the schema declares them.
func recordOrder(raw []byte, s *jsonschema.Schema, depth int) {
	if s == nil || depth > 64 || len(raw) == 0 || raw[0] != '{' {
		return
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return
	}
	if p, ok := fields["properties"]; ok {
		var props map[string]json.RawMessage
		if json.Unmarshal(p, &props) == nil {
			if s.PropertyOrder == nil {
				s.PropertyOrder = objectKeys(p)
			}
			for k, r := range props {
				recordOrder(r, s.Properties[k], depth+1)
			}
		}
	}
	recordOrder(fields["items"], s.Items, depth+1)
	recordOrder(fields["additionalProperties"], s.AdditionalProperties, depth+1)
	for _, defs := range []struct {
		key string
		m   map[string]*jsonschema.Schema
	}{{"$defs", s.Defs}, {"definitions", s.Definitions}} {
		var raws map[string]json.RawMessage
		if json.Unmarshal(fields[defs.key], &raws) == nil {
			for k, r := range raws {
				recordOrder(r, defs.m[k], depth+1)
			}
		}
	}
	for _, list := range []struct {
		key string
		ss  []*jsonschema.Schema
	}{{"anyOf", s.AnyOf}, {"oneOf", s.OneOf}, {"allOf", s.AllOf}} {
		var raws []json.RawMessage
		if json.Unmarshal(fields[list.key], &raws) == nil && len(raws) == len(list.ss) {
			for i, r := range raws {
				recordOrder(r, list.ss[i], depth+1)
			}
		}
	}
}

// objectKeys returns the keys of a JSON object in the order written.
func objectKeys(raw []byte) []string {
	d := json.NewDecoder(bytes.NewReader(raw))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return keys
		}
		k, _ := t.(string)
		keys = append(keys, k)
		var skip json.RawMessage
		if d.Decode(&skip) != nil {
			return keys
		}
	}
	return keys
}
