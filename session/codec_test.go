package session_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
)

func TestCodecRoundTripEveryPayload(t *testing.T) {
	events := sessiontest.AllPayloads("s1")
	seen := map[string]bool{}
	for _, e := range events {
		seen[e.Data.EventType()] = true
		t.Run(e.Data.EventType(), func(t *testing.T) {
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatalf("Marshal: %v", err)
			}
			var got session.Event
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("Unmarshal(%s): %v", b, err)
			}
			if diff := sessiontest.DiffEvents([]session.Event{e}, []session.Event{got}); diff != "" {
				t.Errorf("round trip of %s (-want +got):\n%s", b, diff)
			}
			// AppendEventJSON writes the same bytes as MarshalJSON.
			fast, err := session.AppendEventJSON([]byte("prefix"), e)
			if err != nil || string(fast) != "prefix"+string(b) {
				t.Errorf("AppendEventJSON = %s, %v; want prefix%s", fast, err, b)
			}
		})
	}
	for _, typ := range []string{
		session.TypeTurnStart, session.TypeTurnEnd, session.TypeStepStart, session.TypeStepEnd,
		session.TypeUserMessage, session.TypePromptBlocked, session.TypeContextMessage,
		session.TypeSteeringMessage, session.TypeRequestHeader, session.TypeAssistantChunk,
		session.TypeAssistantMessage, session.TypeToolCall, session.TypeToolResult,
		session.TypeHookDecision, session.TypeCompaction, session.TypeTodoWrite,
		session.TypeSessionMeta, session.TypeRepair, session.TypeRetry, session.TypeFallback,
		session.TypeCacheDrift, session.TypeCacheBreak, session.TypeMCPEvent, session.TypeDecision,
	} {
		if !seen[typ] {
			t.Errorf("AllPayloads has no %s event; the round trip does not cover it", typ)
		}
	}
}

func TestCodecShape(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600000000, time.UTC)
	tests := []struct {
		name string
		ev   session.Event
		want string
	}{
		{
			name: "main agent",
			ev:   session.Event{Seq: 7, Time: at, Session: "s1", Turn: "t1", Run: "r1", Data: &session.TurnStart{Trigger: session.TriggerPrompt}},
			want: `{"seq":7,"time":"2026-01-02T03:04:05.6Z","session":"s1","turn":"t1","run":"r1","type":"turn.start","data":{"trigger":"prompt"}}`,
		},
		{
			name: "subagent",
			ev:   session.Event{Seq: 8, Time: at, Session: "s1", Turn: "t1", Run: "r2", ParentRun: "r1", Agent: "explorer", Data: &session.StepStart{Step: 1}},
			want: `{"seq":8,"time":"2026-01-02T03:04:05.6Z","session":"s1","turn":"t1","run":"r2","parent_run":"r1","agent":"explorer","type":"step.start","data":{"step":1}}`,
		},
		{
			name: "tagged parts",
			ev:   session.Event{Seq: 9, Time: at, Session: "s1", Data: &session.ToolResult{CallID: "c1", Name: "read", Parts: []llm.Part{&llm.Text{Text: "x"}, &llm.Image{URL: "u"}}, IsError: true, Duration: time.Second}},
			want: `{"seq":9,"time":"2026-01-02T03:04:05.6Z","session":"s1","turn":"","run":"","type":"tool.result","data":{"call_id":"c1","name":"read","parts":[{"type":"text","text":"x"},{"type":"image","url":"u"}],"is_error":true,"duration":1000000000}}`,
		},
		{
			name: "escaped header",
			ev:   session.Event{Seq: 1, Time: at, Session: "s", Agent: "a\"<ü>", Data: &session.UserMessage{Parts: []llm.Part{&llm.Text{Text: "hi"}}}},
			want: `{"seq":1,"time":"2026-01-02T03:04:05.6Z","session":"s","turn":"","run":"","agent":"a\"\u003cü\u003e","type":"user.message","data":{"parts":[{"type":"text","text":"hi"}]}}`,
		},
		{
			name: "unknown keeps its bytes",
			ev:   session.Event{Seq: 2, Time: at, Session: "s", Data: &session.Unknown{Type: "x.y", Raw: json.RawMessage(`{ "b" : [1, 2],"a":"<"}`)}},
			want: `{"seq":2,"time":"2026-01-02T03:04:05.6Z","session":"s","turn":"","run":"","type":"x.y","data":{ "b" : [1, 2],"a":"<"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.ev.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("encoding mismatch (-want +got):\n%s", diff)
			}
			back, err := session.DecodeEvent(got)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := back.MarshalJSON()
			if string(again) != tt.want {
				t.Errorf("re-encoding = %s, want %s", again, tt.want)
			}
		})
	}
}

func TestB52_UnknownTypeKeptRaw(t *testing.T) {
	line := `{"seq":3,"time":"2026-01-02T03:04:05Z","session":"s","turn":"t","run":"r","type":"planner.note","data":{"name":"explorer",  "depth":1,"extra":{"z":[true,null]}}}`
	e, err := session.DecodeEvent([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	u, ok := e.Data.(*session.Unknown)
	if !ok {
		t.Fatalf("decoded %T, want *session.Unknown", e.Data)
	}
	if u.Type != "planner.note" || u.EventType() != "planner.note" {
		t.Errorf("Unknown type = %q", u.Type)
	}
	// MarshalJSON and AppendEventJSON keep the bytes; json.Marshal of a
	// value holding an event compacts them, as it does any RawMessage.
	got, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != line {
		t.Errorf("re-encoded\n%s\nwant byte-identical\n%s", got, line)
	}
}

func TestDecodeEventErrors(t *testing.T) {
	tests := []struct {
		name, line, want string
	}{
		{"not json", `{"seq":1,`, "unexpected end"},
		{"no type", `{"seq":1,"data":{}}`, `missing "type"`},
		{"payload of the wrong shape", `{"seq":4,"type":"turn.start","data":{"trigger":5}}`, "turn.start event 4"},
		{"bad part", `{"seq":1,"type":"user.message","data":{"parts":[{"type":"hologram"}]}}`, "hologram"},
		{"trailing garbage", `{"seq":1,"type":"turn.start","data":{}} x`, "invalid character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := session.DecodeEvent([]byte(tt.line))
			if !errors.Is(err, session.ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %q, want it to mention %q", err, tt.want)
			}
		})
	}
}

func TestEncodeErrors(t *testing.T) {
	if _, err := json.Marshal(session.Event{Seq: 1}); err == nil || !strings.Contains(err.Error(), "Data is nil") {
		t.Errorf("encoding an event without payload: err = %v", err)
	}
	if _, err := session.AppendEventJSON(nil, session.Event{Seq: 1, Data: &session.Unknown{Type: "x", Raw: json.RawMessage("{bad")}}); err == nil {
		t.Errorf("encoding invalid raw data succeeded")
	}
	if _, err := session.AppendEventJSON(nil, session.Event{Seq: 1, Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), Data: &session.TurnStart{}}); err == nil {
		t.Errorf("encoding a time past year 9999 succeeded")
	}
	if _, err := session.AppendEventJSON(nil, session.Event{Seq: 1, Data: &session.Unknown{Raw: json.RawMessage("{}")}}); err == nil {
		t.Errorf("encoding an Unknown without type succeeded")
	}
}

func TestCloneIsDeep(t *testing.T) {
	events := sessiontest.AllPayloads("s")
	clones := make([]session.Event, len(events))
	for i, e := range events {
		clones[i] = e.Clone()
	}
	before, err := json.Marshal(clones)
	if err != nil {
		t.Fatal(err)
	}
	// Scribble over every byte and string reachable from the originals.
	for _, e := range events {
		scribble(e.Data)
	}
	after, _ := json.Marshal(clones)
	if diff := cmp.Diff(string(before), string(after)); diff != "" {
		t.Errorf("changing the originals changed the clones (-before +after):\n%s", diff)
	}
}

// scribble changes the contents of shared memory in p: slice elements and
// pointed-to values.
func scribble(p session.Payload) {
	parts := func(ps []llm.Part) {
		for _, q := range ps {
			switch q := q.(type) {
			case *llm.Text:
				q.Text = "scribbled"
			case *llm.ToolCall:
				if len(q.Args) > 0 {
					q.Args[0] = ' '
				}
			case *llm.Image:
				if len(q.Data) > 0 {
					q.Data[0] = 0
				}
			case *llm.ToolResult:
				q.CallID = "scribbled"
			}
		}
	}
	switch p := p.(type) {
	case *session.UserMessage:
		parts(p.Parts)
	case *session.ContextMessage:
		parts(p.Parts)
	case *session.SteeringMessage:
		parts(p.Parts)
	case *session.AssistantMessage:
		parts(p.Parts)
		p.Provenance.Model = "scribbled"
		p.Provenance.State[0] = ' '
	case *session.ToolResult:
		parts(p.Parts)
	case *session.RequestHeader:
		p.Tools[0] = "scribbled"
		p.System[0].Text = "scribbled"
		p.Sampling[0] = ' '
	case *session.AssistantChunk:
		p.Deltas[0].Text = "scribbled"
	case *session.ToolCall:
		p.Args[0] = ' '
		p.Coerced[0] = "scribbled"
	case *session.HookDecision:
		p.Detail[0] = ' '
	case *session.TodoWrite:
		p.Items[0].Content = "scribbled"
	case *session.TurnStart:
		p.Trigger = "scribbled"
	}
}

// semanticJSON compares raw JSON by meaning (encoding/json compacts and
// HTML-escapes raw fields it writes) and treats empty and nil as equal.
var semanticJSON = cmp.Options{
	cmp.FilterPath(func(p cmp.Path) bool { return p.Last().Type() == reflect.TypeFor[json.RawMessage]() },
		cmp.FilterValues(func(x, y json.RawMessage) bool { return len(x) > 0 || len(y) > 0 }, cmp.Comparer(func(x, y json.RawMessage) bool {
			var vx, vy any
			ex, ey := json.Unmarshal(x, &vx), json.Unmarshal(y, &vy)
			return ex == nil && ey == nil && cmp.Equal(vx, vy)
		}))),
	cmpopts.EquateEmpty(),
}

func FuzzDecodeEvent(f *testing.F) {
	for _, e := range sessiontest.AllPayloads("s") {
		b, _ := json.Marshal(e)
		f.Add(b)
	}
	f.Add([]byte(`{"seq":1,"type":"x","data":{"a": [1, 2]}}`))
	f.Add([]byte(`{"seq":1,"type":"user.message","data":null}`))
	f.Add([]byte(`{"seq":-1,"time":"2026-01-02T03:04:05+05:30","type":"tool.result","data":{"parts":[{"type":"tool_result","parts":[{"type":"text"}]}]}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := session.DecodeEvent(line)
		if err != nil {
			if !errors.Is(err, session.ErrCorrupt) {
				t.Fatalf("decode error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		b, err := session.AppendEventJSON(nil, e)
		if err != nil {
			// Times outside years 0-9999 decode but cannot be written back.
			if y := e.Time.Year(); y < 0 || y > 9999 {
				return
			}
			t.Fatalf("re-encoding %q: %v", line, err)
		}
		back, err := session.DecodeEvent(b)
		if err != nil {
			t.Fatalf("decoding the re-encoding %s: %v", b, err)
		}
		if diff := cmp.Diff(e, back, semanticJSON); diff != "" {
			t.Fatalf("decode(encode(e)) != e for %s (-first +second):\n%s", b, diff)
		}
		again, err := session.AppendEventJSON(nil, back)
		if err != nil || string(again) != string(b) {
			t.Fatalf("second encoding differs:\n%s\n%s (%v)", b, again, err)
		}
	})
}

// TestDecodeFastPathsMatchGeneral decodes each event as the codec writes
// it, which takes the direct paths for the header and for text parts,
// and indented, which takes encoding/json throughout: both must give the
// same event.
func TestDecodeFastPathsMatchGeneral(t *testing.T) {
	var lines [][]byte
	texts := []string{"", "plain", `quote " back \ slash / tab	`, "line\nline\r\n", "\b\f\x01 control", "é ü 😀 \u2028", "<html>&amp;"}
	for i, text := range texts {
		for _, p := range []session.Payload{
			&session.UserMessage{Parts: []llm.Part{&llm.Text{Text: text}}},
			&session.ToolResult{CallID: "c", Parts: []llm.Part{&llm.Text{Text: text}, &llm.Text{Text: text, Cache: &llm.CacheHint{}}}},
		} {
			e := session.Event{Seq: int64(i + 1), Time: sessiontest.Base, Session: "s", Turn: "t", Run: "r", Agent: text, Data: p}
			b, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, b)
		}
	}
	for _, e := range sessiontest.AllPayloads("s1") {
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, b)
	}
	// Lines the encoder never writes: \u escapes, invalid UTF-8, a key after data.
	lines = append(lines,
		[]byte(`{"seq":1,"time":"2026-03-14T15:09:26Z","session":"s","turn":"t","run":"r","type":"user.message","data":{"parts":[{"type":"text","text":"\u00e9\ud83d\ude00\u0041"}]}}`),
		[]byte("{\"seq\":1,\"time\":\"2026-03-14T15:09:26Z\",\"session\":\"s\xff\",\"turn\":\"t\",\"run\":\"r\",\"type\":\"user.message\",\"data\":{\"parts\":[{\"type\":\"text\",\"text\":\"bad \xff\xfe utf-8\"}]}}"),
		[]byte(`{"seq":1,"time":"2026-03-14T15:09:26Z","session":"s","turn":"t","run":"r","type":"step.start","data":{"step":1},"agent":"late"}`),
	)
	for _, line := range lines {
		var indented bytes.Buffer
		if err := json.Indent(&indented, line, "", "  "); err != nil {
			t.Fatalf("indent %s: %v", line, err)
		}
		want, err := session.DecodeEvent(indented.Bytes())
		if err != nil {
			t.Fatalf("DecodeEvent(indented %s): %v", line, err)
		}
		got, err := session.DecodeEvent(line)
		if err != nil {
			t.Fatalf("DecodeEvent(%s): %v", line, err)
		}
		// Raw JSON keeps its whitespace: compare the events re-encoded,
		// which compacts it, and every other field directly.
		wb, werr := json.Marshal(want)
		gb, gerr := json.Marshal(got)
		if werr != nil || gerr != nil || !bytes.Equal(wb, gb) {
			t.Errorf("DecodeEvent(%s) differs from the general path:\n got %s (%v)\nwant %s (%v)", line, gb, gerr, wb, werr)
		}
		if diff := cmp.Diff(want, got, sessiontest.EventOpts, cmpopts.IgnoreTypes(json.RawMessage(nil))); diff != "" {
			t.Errorf("DecodeEvent(%s) differs from the general path (-want +got):\n%s", line, diff)
		}
	}
}

// FuzzDecoder: a Decoder that has read one line decodes the next as
// DecodeEvent does, whatever header strings the two share.
func FuzzDecoder(f *testing.F) {
	evs := sessiontest.AllPayloads("s")
	for i := 1; i < len(evs); i++ {
		a, _ := json.Marshal(evs[i-1])
		b, _ := json.Marshal(evs[i])
		f.Add(a, b)
	}
	f.Add([]byte(`{"seq":1,"time":"2026-03-14T15:09:26Z","session":"s","turn":"t","run":"r","agent":"a","type":"step.start","data":{"step":1}}`),
		[]byte(`{"seq":2,"time":"2026-03-14T15:09:26Z","session":"s\"","turn":"t","run":"r\u0041","agent":"a","type":"step.start","data":{"step":2}}`))
	f.Fuzz(func(t *testing.T, first, second []byte) {
		var d session.Decoder
		d.Decode(first)
		got, gerr := d.Decode(second)
		want, werr := session.DecodeEvent(second)
		if (gerr == nil) != (werr == nil) {
			t.Fatalf("after %q, %q: Decoder error %v, DecodeEvent error %v", first, second, gerr, werr)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("after %q, %q: Decoder differs (-DecodeEvent +Decoder):\n%s", first, second, diff)
		}
	})
}
