package llmtest

import (
	"testing"
)

// FuzzDecode feeds arbitrary bodies to both wires' request decoders and
// the cache simulation: they must fail with an error, never panic.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","max_tokens":5,"stream":true,"system":"s","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","max_tokens":5,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral","ttl":"1h"}}],` +
			`"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"c","name":"n","input":{}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AQI="}}]}]}]}`,
		`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AQI="}}]},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"n","arguments":"{"}}]},{"role":"tool","tool_call_id":"c","content":"r"}],` +
			`"tool_choice":{"type":"function","function":{"name":"n"}},"stop":"x","response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{}}}}`,
		`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","content":null}]}]}`,
		`[]`, `null`, `{"messages":[{}]}`,
	} {
		f.Add([]byte(s))
	}
	cache := newPromptCache(1, nil)
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, w := range []wire{anthropicWire{}, openaiWire{}} {
			d, err := w.decode(body)
			if err != nil {
				continue
			}
			if d.req == nil {
				t.Fatalf("%s: nil request without an error", w.name())
			}
			cache.apply(d)
		}
	})
}
