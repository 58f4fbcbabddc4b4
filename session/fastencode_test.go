package session_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
)

// directTypes are the payloads with a direct encoder.
var directTypes = []string{session.TypeTurnStart, session.TypeTurnEnd, session.TypeStepStart, session.TypeStepEnd,
	session.TypeUserMessage, session.TypeContextMessage, session.TypeSteeringMessage, session.TypeAssistantMessage,
	session.TypeToolCall, session.TypeToolResult, session.TypeRequestHeader}

// encodeCase is a payload and whether the direct encoder must decline it.
type encodeCase struct {
	name     string
	p        session.Payload
	declines bool
}

// encodeEdges are the corners of what json.Marshal writes for the
// payloads with a direct encoder.
func encodeEdges() []encodeCase {
	const tricky = "<b>&amp;</b> \u2028 \u2029 \x00\x1f\x7f \"\\/ \b\f\n\r\t é 😀"
	hint, hour := &llm.CacheHint{}, &llm.CacheHint{TTL: time.Hour}
	return []encodeCase{
		{name: "escapes", p: &session.TurnEnd{Reason: "<&>", Cause: tricky, Message: tricky, Code: tricky}},
		{name: "invalid UTF-8", p: &session.TurnStart{Trigger: "a\xffb\xc3 \xed\xa0\x80 \xe2\x80"}},
		{name: "empty turn end", p: &session.TurnEnd{}},
		{name: "negative step", p: &session.StepStart{Step: -1}},
		{name: "zero usage", p: &session.StepEnd{Step: 1, Finish: llm.FinishStop}},
		{name: "one counter", p: &session.StepEnd{Usage: llm.Usage{CacheWrite1h: 3}}},
		{name: "every counter", p: &session.StepEnd{Usage: llm.Usage{Input: 1, Output: 2, Reasoning: 3, CacheRead: 4, CacheWrite: 5, CacheWrite5m: 6, CacheWrite1h: 7}}},
		{name: "nil parts", p: &session.UserMessage{}},
		{name: "empty parts", p: &session.ContextMessage{Parts: llm.PartList{}, Source: tricky}},
		{name: "every part", p: &session.SteeringMessage{Parts: []llm.Part{
			&llm.Text{Text: tricky, Cache: hint},
			&llm.Reasoning{Signature: "sig"},
			&llm.Reasoning{},
			&llm.Reasoning{Text: tricky, Signature: "s", Redacted: "r", Cache: hour},
			&llm.ToolCall{},
			&llm.ToolCall{ID: "c", Name: "n", Cache: hint},
			&llm.Image{},
			&llm.Image{MediaType: "image/png", Data: []byte{0, 1, 2, 0xff}, URL: "u", Cache: hour},
			&llm.Image{Data: []byte{}},
			&llm.Document{MediaType: "application/pdf", Data: []byte("%PDF-1.7"), URL: "https://x/?a=1&b=<2>", Title: tricky, Cache: hint},
			&llm.Document{},
		}}},
		{name: "args", p: &session.AssistantMessage{Parts: []llm.Part{
			&llm.ToolCall{ID: "a", Args: json.RawMessage(" { \"a\" : [ 1 , 2.50 ] ,\n\t\"b\":\"x y\" } ")},
			&llm.ToolCall{ID: "b", Args: json.RawMessage(`{"html":"<b>&</b>` + "\u2028\u2029" + `"}`), Cache: hour},
			&llm.ToolCall{ID: "c", Args: json.RawMessage(`{"a":`), Cache: hint},
			&llm.ToolCall{ID: "d", Args: json.RawMessage(`null`)},
			&llm.ToolCall{ID: "e", Args: json.RawMessage(" ")},
			&llm.ToolCall{ID: "f", Args: json.RawMessage("{\"a\":\"\xff<\"}")},
			&llm.ToolCall{ID: "g", Args: json.RawMessage("not json \xff <>")},
			&llm.ToolCall{ID: "h", Args: json.RawMessage{}},
		}}},
		{name: "nested results", p: &session.ToolResult{CallID: "o", Parts: []llm.Part{
			&llm.ToolResult{CallID: "i", IsError: true, Cache: hint, Parts: []llm.Part{
				&llm.ToolResult{CallID: "j", Cache: hour, Parts: []llm.Part{&llm.Image{Data: []byte("png")}}},
				&llm.Text{Text: "t"},
			}},
			&llm.ToolResult{},
			&llm.ToolResult{CallID: "k", Parts: []llm.Part{}},
		}}},
		{name: "interrupted message", p: &session.AssistantMessage{Parts: []llm.Part{&llm.Text{Text: "par"}}, Interrupted: true,
			Usage: llm.Usage{Reasoning: 1}, Provenance: &llm.Provenance{}}},
		{name: "provenance state", p: &session.AssistantMessage{Provenance: &llm.Provenance{Provider: "p", Model: "m", State: json.RawMessage(` [ "<", 1 ] `)}}},
		{name: "interrupted result", p: &session.ToolResult{CallID: "c", Interrupted: true, Duration: -time.Second, Outcome: session.OutcomeInterrupted}},
		{name: "tool call args", p: &session.ToolCall{CallID: "c", Name: "n", Args: json.RawMessage(" {\"a\": \"<\u2028>\" } "), Coerced: []string{tricky, ""}}},
		{name: "null args", p: &session.ToolCall{Args: json.RawMessage(`null`), Coerced: []string{}}},
		{name: "request header", p: &session.RequestHeader{Provider: tricky, Sampling: json.RawMessage(`{ "t" : 1 }`),
			System: []llm.Text{{Text: "a"}, {Text: tricky, Cache: hint}, {Cache: hour}}, Tools: []string{"a", "<b>"}, Reason: "change"}},
		{name: "empty request header", p: &session.RequestHeader{System: []llm.Text{}, Tools: []string{}, Sampling: json.RawMessage{}}},

		{name: "nil payload", p: (*session.ToolResult)(nil), declines: true},
		{name: "nil part", p: &session.UserMessage{Parts: []llm.Part{&llm.Text{Text: "a"}, nil}}, declines: true},
		{name: "nil text", p: &session.UserMessage{Parts: []llm.Part{(*llm.Text)(nil)}}, declines: true},
		{name: "nil nested part", p: &session.ToolResult{Parts: []llm.Part{&llm.ToolResult{Parts: []llm.Part{(*llm.Image)(nil)}}}}, declines: true},
		{name: "invalid args", p: &session.ToolCall{CallID: "c", Args: json.RawMessage(`{"a":`)}, declines: true},
		{name: "invalid state", p: &session.AssistantMessage{Provenance: &llm.Provenance{State: json.RawMessage(`[`)}}, declines: true},
		{name: "invalid sampling", p: &session.RequestHeader{Sampling: json.RawMessage(`{1}`)}, declines: true},
		{name: "not covered", p: &session.Retry{Attempt: 1}, declines: true},
	}
}

// TestDirectEncode: the direct encoder writes what json.Marshal writes,
// byte for byte, and takes every payload of its types that json.Marshal
// takes.
func TestDirectEncode(t *testing.T) {
	cases := encodeEdges()
	for _, p := range session.FastSamples() {
		cases = append(cases, encodeCase{name: "sample " + p.EventType(), p: p})
	}
	for _, e := range sessiontest.AllPayloads("s1") {
		cases = append(cases, encodeCase{name: "all " + e.Data.EventType(), p: e.Data})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(tc.p)
			got, ok := session.AppendPayloadDirect([]byte("x"), tc.p)
			switch {
			case tc.declines || !slices.Contains(directTypes, tc.p.EventType()):
				if ok && tc.declines {
					t.Fatalf("the direct encoder wrote %s; want it to decline", got)
				}
			case err != nil:
				t.Fatalf("json.Marshal: %v", err)
			case !ok:
				t.Fatalf("the direct encoder declined; json.Marshal writes %s", want)
			}
			if ok && string(got) != "x"+string(want) {
				t.Errorf("direct:\n %s\njson.Marshal:\nx%s", got, want)
			}
			checkAppendPayloadJSON(t, tc.p)
		})
	}
}

// TestDirectEncodeEveryField: with every field of a payload set, parts
// and all, the direct encoder still writes what json.Marshal writes, so
// a field added to a payload or a part and not to the encoder fails here.
func TestDirectEncodeEveryField(t *testing.T) {
	for _, typ := range directTypes {
		p, err := session.DecodePayload(typ, nil) // a zero payload
		if err != nil {
			t.Fatal(err)
		}
		fill(t, reflect.ValueOf(p).Elem(), 2)
		want, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("%s: json.Marshal: %v", typ, err)
		}
		if got, ok := session.AppendPayloadDirect(nil, p); !ok || !bytes.Equal(got, want) {
			t.Errorf("%s: direct (ok %v):\n %s\njson.Marshal:\n %s", typ, ok, got, want)
		}
	}
}

// fill sets v and what it holds, parts nested depth deep, to values that
// are not zero.
func fill(t *testing.T, v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("s<&>")
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(t, v.Elem(), depth)
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(t, v.Field(i), depth)
			}
		}
	case reflect.Slice:
		switch elem := v.Type().Elem(); {
		case v.Type() == reflect.TypeFor[json.RawMessage]():
			v.SetBytes([]byte(" {\"a\" : [1, \"<\"]} "))
		case elem.Kind() == reflect.Uint8:
			v.SetBytes([]byte{0, 1, 0xff})
		case elem == reflect.TypeFor[llm.Part]():
			if depth == 0 {
				return
			}
			parts := []llm.Part{new(llm.Text), new(llm.Reasoning), new(llm.ToolCall), new(llm.ToolResult), new(llm.Image), new(llm.Document)}
			for _, p := range parts {
				fill(t, reflect.ValueOf(p).Elem(), depth-1)
			}
			v.Set(reflect.ValueOf(parts).Convert(v.Type()))
		default:
			v.Set(reflect.MakeSlice(v.Type(), 2, 2))
			fill(t, v.Index(0), depth)
			fill(t, v.Index(1), depth)
		}
	default:
		t.Fatalf("fill: a %s field; teach fill and the direct encoder about it", v.Type())
	}
}

// checkAppendPayloadJSON checks that AppendPayloadJSON writes what
// json.Marshal writes, or fails as it does.
func checkAppendPayloadJSON(t *testing.T, p session.Payload) {
	t.Helper()
	want, wantErr := json.Marshal(p)
	got, err := session.AppendPayloadJSON([]byte("x"), p)
	switch {
	case (err != nil) != (wantErr != nil):
		t.Fatalf("AppendPayloadJSON: %v; json.Marshal: %v", err, wantErr)
	case err == nil && !bytes.Equal(got, append([]byte("x"), want...)):
		t.Fatalf("AppendPayloadJSON:\n %s\njson.Marshal:\nx%s", got, want)
	}
}

// FuzzDirectEncode: whatever encoding/json decodes into a payload with a
// direct encoder, the encoder declines or writes as json.Marshal does.
func FuzzDirectEncode(f *testing.F) {
	add := func(p session.Payload) {
		if k := slices.Index(directTypes, p.EventType()); k >= 0 {
			if data, err := json.Marshal(p); err == nil {
				f.Add(uint8(k), data)
			}
		}
	}
	for _, p := range session.FastSamples() {
		add(p)
	}
	for _, e := range sessiontest.AllPayloads("s1") {
		add(e.Data)
	}
	for _, tc := range encodeEdges() {
		add(tc.p)
	}
	kind := func(typ string) uint8 { return uint8(slices.Index(directTypes, typ)) }
	f.Add(kind(session.TypeToolCall), []byte("{\"args\": { \"a\" : \"<\u2028>\" } ,\"coerced\":[]}"))
	f.Add(kind(session.TypeAssistantMessage), []byte(`{"parts":[{"type":"tool_call","id":"c","args_text":"{\u003c"},{"type":"tool_call","args":null}],"provenance":{"state": [1, 2]}}`))
	f.Add(kind(session.TypeToolResult), []byte(`{"parts":[{"type":"tool_result","parts":[{"type":"image","data":"AAEC","cache":{"ttl":0}}]}],"duration":-5}`))
	f.Add(kind(session.TypeRequestHeader), []byte(`{"system":[{"text":"\ud800"},{"cache":{}}],"tools":[],"sampling":{ }}`))
	f.Fuzz(func(t *testing.T, k uint8, data []byte) {
		typ := directTypes[int(k)%len(directTypes)]
		p, err := session.DecodePayload(typ, nil) // a zero payload
		if err != nil {
			t.Fatal(err)
		}
		if json.Unmarshal(data, p) != nil {
			return
		}
		want, wantErr := json.Marshal(p)
		if got, ok := session.AppendPayloadDirect(nil, p); ok {
			if wantErr != nil {
				t.Fatalf("%s %q: the direct encoder wrote %s; json.Marshal: %v", typ, data, got, wantErr)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s %q:\ndirect:       %s\njson.Marshal: %s", typ, data, got, want)
			}
		}
		checkAppendPayloadJSON(t, p)
	})
}

// raceEnabled is set under the race detector, which makes sync.Pool drop
// items at random: encoding/json's validator, which pools its scanners,
// then allocates now and then.
var raceEnabled bool

// TestAppendPayloadJSONDoesNotAllocate: a step's commonest payloads are
// written without reflection, into a buffer with room.
func TestAppendPayloadJSONDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	for _, e := range sessiontest.AllPayloads("s1") {
		if typ := e.Data.EventType(); typ != session.TypeAssistantMessage && typ != session.TypeToolResult {
			continue
		}
		buf := make([]byte, 0, 4096)
		allocs := testing.AllocsPerRun(100, func() {
			if _, err := session.AppendPayloadJSON(buf, e.Data); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("AppendPayloadJSON of a %s allocates %v times; want 0", e.Data.EventType(), allocs)
		}
	}
}
