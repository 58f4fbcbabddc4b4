package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/reinhq/rein/llm"
)

// errNoPayload is returned when an event without Data is encoded.
var errNoPayload = errors.New("session: encode event: Data is nil; set a payload such as *TurnStart")

// MarshalJSON encodes e as
//
//	{"seq","time","session","turn","run","parent_run","agent","type","data"}
//
// with parent_run and agent omitted when empty. An *Unknown payload's raw
// data is written back byte for byte.
func (e Event) MarshalJSON() ([]byte, error) {
	return AppendEventJSON(make([]byte, 0, 256), e)
}

// UnmarshalJSON decodes an event written by MarshalJSON. The "type" selects
// the payload; a type this version does not know decodes to *Unknown.
func (e *Event) UnmarshalJSON(b []byte) error {
	ev, err := DecodeEvent(b)
	if err != nil {
		return err
	}
	*e = ev
	return nil
}

// AppendEventJSON appends the JSON encoding of e (the same bytes as
// e.MarshalJSON, without a trailing newline) to dst and returns the
// extended slice. Stores use it to build a line or a batch without an
// intermediate buffer.
func AppendEventJSON(dst []byte, e Event) ([]byte, error) {
	if e.Data == nil {
		return dst, errNoPayload
	}
	typ := e.Data.EventType()
	if typ == "" {
		return dst, errors.New(`session: encode event: payload has an empty type; an *Unknown needs its Type set`)
	}
	if y := e.Time.Year(); y < 0 || y > 9999 {
		return dst, fmt.Errorf("session: encode %s event %d: time %v is outside years 0 to 9999", typ, e.Seq, e.Time)
	}
	dst = append(dst, `{"seq":`...)
	dst = strconv.AppendInt(dst, e.Seq, 10)
	dst = append(dst, `,"time":"`...)
	dst = e.Time.AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","session":`...)
	dst = appendString(dst, string(e.Session))
	dst = append(dst, `,"turn":`...)
	dst = appendString(dst, string(e.Turn))
	dst = append(dst, `,"run":`...)
	dst = appendString(dst, string(e.Run))
	if e.ParentRun != "" {
		dst = append(dst, `,"parent_run":`...)
		dst = appendString(dst, string(e.ParentRun))
	}
	if e.Agent != "" {
		dst = append(dst, `,"agent":`...)
		dst = appendString(dst, e.Agent)
	}
	dst = append(dst, `,"type":`...)
	dst = appendString(dst, typ)
	dst = append(dst, `,"data":`...)
	if u, ok := e.Data.(*Unknown); ok {
		switch {
		case len(u.Raw) == 0:
			dst = append(dst, "null"...)
		case json.Valid(u.Raw):
			dst = append(dst, u.Raw...)
		default:
			return dst, fmt.Errorf("session: encode %q event: raw data is not valid JSON", typ)
		}
	} else {
		var body []byte
		var err error
		if m, ok := e.Data.(json.Marshaler); ok {
			// Payloads with parts write valid, compact JSON themselves;
			// calling them directly skips encoding/json's second pass.
			body, err = m.MarshalJSON()
		} else {
			body, err = json.Marshal(e.Data)
		}
		if err != nil {
			return dst, fmt.Errorf("session: encode %s event: %w", typ, err)
		}
		dst = append(dst, body...)
	}
	return append(dst, '}'), nil
}

// appendString appends s as a JSON string. Plain ASCII, the common case,
// is copied as is; anything else goes through encoding/json so escaping
// and invalid UTF-8 are handled exactly as for payloads.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			b, _ := json.Marshal(s) // a string always encodes
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}

// eventWire is the JSON header of an event, with data left raw until the
// type is known.
type eventWire struct {
	Seq       int64           `json:"seq"`
	Time      time.Time       `json:"time"`
	Session   ID              `json:"session"`
	Turn      TurnID          `json:"turn"`
	Run       RunID           `json:"run"`
	ParentRun RunID           `json:"parent_run"`
	Agent     string          `json:"agent"`
	Type      string          `json:"type"`
	Data      json.RawMessage `json:"data"`
}

// DecodeEvent decodes one event from its JSON encoding, such as a line of
// an NDJSON log. Errors wrap ErrCorrupt. An unknown "type" is not an
// error: it decodes to *Unknown holding the raw data.
//
// An event laid out as AppendEventJSON writes it has its header read
// directly and its data decoded by one encoding/json call, so its bytes
// are scanned once for syntax and once for values; any other layout, or
// data that does not decode so, takes the general path, which decides.
func DecodeEvent(b []byte) (Event, error) {
	if w, ok := scanEnvelope(b); ok {
		if p, err := decodePayload(w.Type, w.Data); err == nil {
			return w.event(p), nil
		}
	}
	var w eventWire
	if err := json.Unmarshal(b, &w); err != nil {
		return Event{}, fmt.Errorf("%w: decode event: %w", ErrCorrupt, err)
	}
	if w.Type == "" {
		return Event{}, fmt.Errorf(`%w: decode event: missing "type"`, ErrCorrupt)
	}
	p, err := decodePayload(w.Type, w.Data)
	if err != nil {
		return Event{}, fmt.Errorf("%w: decode %s event %d: %w", ErrCorrupt, w.Type, w.Seq, err)
	}
	return w.event(p), nil
}

func (w *eventWire) event(p Payload) Event {
	return Event{
		Seq:       w.Seq,
		Time:      w.Time,
		Session:   w.Session,
		Turn:      w.Turn,
		Run:       w.Run,
		ParentRun: w.ParentRun,
		Agent:     w.Agent,
		Data:      p,
	}
}

// DecodePayload decodes the "data" of an event of type typ, for stores
// that keep the header fields apart from it. Empty data or null is a
// zero payload; a type this version does not know decodes to *Unknown
// holding a copy of the raw data, which must be valid JSON. Errors wrap
// ErrCorrupt.
func DecodePayload(typ string, data []byte) (Payload, error) {
	p, err := decodePayload(typ, data)
	if err != nil {
		return nil, fmt.Errorf("%w: decode %s event: %w", ErrCorrupt, typ, err)
	}
	return p, nil
}

func decodePayload(typ string, data []byte) (Payload, error) {
	if bytes.Equal(data, []byte("null")) {
		data = nil
	}
	p := newPayload(typ)
	if p == nil {
		if data != nil && !json.Valid(data) {
			return nil, errors.New("data is not valid JSON")
		}
		return &Unknown{Type: typ, Raw: bytes.Clone(data)}, nil
	}
	if data != nil {
		if err := json.Unmarshal(data, withParts(p)); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// withParts returns what to decode payload p's data into: for a payload
// with parts, a view of p whose parts decode as fastParts, else p.
func withParts(p Payload) any {
	type (
		user      UserMessage
		context   ContextMessage
		steering  SteeringMessage
		assistant AssistantMessage
		result    ToolResult
	)
	switch p := p.(type) {
	case *UserMessage:
		return &struct {
			*user
			Parts *fastParts `json:"parts"`
		}{(*user)(p), (*fastParts)(&p.Parts)}
	case *ContextMessage:
		return &struct {
			*context
			Parts *fastParts `json:"parts"`
		}{(*context)(p), (*fastParts)(&p.Parts)}
	case *SteeringMessage:
		return &struct {
			*steering
			Parts *fastParts `json:"parts"`
		}{(*steering)(p), (*fastParts)(&p.Parts)}
	case *AssistantMessage:
		return &struct {
			*assistant
			Parts *fastParts `json:"parts"`
		}{(*assistant)(p), (*fastParts)(&p.Parts)}
	case *ToolResult:
		return &struct {
			*result
			Parts *fastParts `json:"parts"`
		}{(*result)(p), (*fastParts)(&p.Parts)}
	}
	return p
}

// fastParts is an llm.PartList inside a payload being decoded. Its bytes
// were checked by the json.Unmarshal of the payload, so they are split
// into parts without checking them again, and a text part, the common
// one, is decoded by one json.Unmarshal instead of llm.UnmarshalPart's
// two (its tag, then its fields). Other parts go to llm.UnmarshalPart.
type fastParts llm.PartList

var textTag = []byte(`{"type":"` + (*llm.Text)(nil).PartType() + `"`)

// UnmarshalJSON decodes an array written by llm.PartList.MarshalJSON.
func (l *fastParts) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '[' {
		return (*llm.PartList)(l).UnmarshalJSON(b) // null, or an error to report
	}
	var out []llm.Part
	for rest := b[1 : len(b)-1]; ; {
		rest = bytes.TrimLeft(rest, " \t\r\n,")
		if len(rest) == 0 {
			break
		}
		n := valueLen(rest)
		elem := rest[:n]
		rest = rest[n:]
		var p llm.Part
		if t, ok := plainText(elem); ok {
			p = t
		} else if after, ok := bytes.CutPrefix(elem, textTag); ok && len(after) > 0 && (after[0] == ',' || after[0] == '}') {
			t := new(llm.Text)
			if err := json.Unmarshal(elem, t); err != nil {
				return fmt.Errorf("llm: unmarshal text part: %w", err)
			}
			p = t
		} else {
			var err error
			if p, err = llm.UnmarshalPart(elem); err != nil {
				return err
			}
		}
		out = append(out, p)
	}
	*l = out
	return nil
}

var plainTextHead = []byte(`{"type":"` + (*llm.Text)(nil).PartType() + `","text":"`)

// plainText decodes a text part that holds only its text, as
// llm.MarshalPart writes it, when the text needs no more than the short
// escapes (\n, \", …) and is valid UTF-8: the bulk of a log's bytes,
// read without encoding/json. ok is false for anything else.
func plainText(elem []byte) (*llm.Text, bool) {
	body, ok := bytes.CutPrefix(elem, plainTextHead)
	if !ok {
		return nil, false
	}
	body, ok = bytes.CutSuffix(body, []byte(`"}`))
	if !ok {
		return nil, false
	}
	var (
		buf   []byte // the text, once an escape is met
		from  int    // start of the bytes not yet copied to buf
		ascii = true
	)
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c == '"' || c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		case c == '\\':
			if i+1 == len(body) {
				return nil, false
			}
			r := shortEscape(body[i+1])
			if r == 0 {
				return nil, false
			}
			if buf == nil {
				buf = make([]byte, 0, len(body))
			}
			buf = append(append(buf, body[from:i]...), r)
			i++
			from = i + 1
		}
	}
	if !ascii && !utf8.Valid(body) {
		return nil, false // encoding/json replaces invalid UTF-8; let it
	}
	if buf == nil {
		return &llm.Text{Text: string(body)}, true
	}
	return &llm.Text{Text: string(append(buf, body[from:]...))}, true
}

// shortEscape returns the byte a JSON escape \c stands for, or 0 if c
// is not one of the two-byte escapes.
func shortEscape(c byte) byte {
	switch c {
	case '"', '\\', '/':
		return c
	case 'n':
		return '\n'
	case 't':
		return '\t'
	case 'r':
		return '\r'
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	}
	return 0
}

// valueLen returns the length of the JSON value b starts with; b holds
// checked JSON, and the value is an object, an array or a scalar.
func valueLen(b []byte) int {
	depth, inStr := 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inStr:
			if c == '\\' {
				i++
			} else if c == '"' {
				inStr = false
				if depth == 0 {
					return i + 1
				}
			}
		case c == '"':
			inStr = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n'):
			return i
		}
	}
	return len(b)
}

// scanEnvelope reads the header of an event laid out exactly as
// AppendEventJSON writes it, with strings that need no unescaping, and
// slices out its data (not yet checked). ok is false for anything else.
func scanEnvelope(b []byte) (w eventWire, ok bool) {
	r := envReader{b: b}
	if !r.lit(`{"seq":`) {
		return w, false
	}
	w.Seq, ok = r.int()
	if !ok || !r.lit(`,"time":`) {
		return w, false
	}
	if _, ok := r.str(); !ok || w.Time.UnmarshalJSON(b[r.last:r.i]) != nil {
		return w, false
	}
	var s [3]string
	for k, key := range [3]string{`,"session":`, `,"turn":`, `,"run":`} {
		if !r.lit(key) {
			return w, false
		}
		if s[k], ok = r.str(); !ok {
			return w, false
		}
	}
	w.Session, w.Turn, w.Run = ID(s[0]), TurnID(s[1]), RunID(s[2])
	if r.lit(`,"parent_run":`) {
		v, ok := r.str()
		if !ok || v == "" {
			return w, false
		}
		w.ParentRun = RunID(v)
	}
	if r.lit(`,"agent":`) {
		if w.Agent, ok = r.str(); !ok || w.Agent == "" {
			return w, false
		}
	}
	if !r.lit(`,"type":`) {
		return w, false
	}
	if w.Type, ok = r.str(); !ok || w.Type == "" || !r.lit(`,"data":`) {
		return w, false
	}
	if len(b) < r.i+2 || b[len(b)-1] != '}' {
		return w, false
	}
	w.Data = b[r.i : len(b)-1]
	return w, true
}

// envReader walks the header of an encoded event.
type envReader struct {
	b    []byte
	i    int
	last int // where the last string read began (its opening quote)
}

func (r *envReader) lit(s string) bool {
	if len(r.b)-r.i < len(s) || string(r.b[r.i:r.i+len(s)]) != s {
		return false
	}
	r.i += len(s)
	return true
}

// int reads a non-negative integer of up to 18 digits without leading zeros.
func (r *envReader) int() (int64, bool) {
	var n int64
	j := r.i
	for ; j < len(r.b) && j-r.i < 18 && r.b[j] >= '0' && r.b[j] <= '9'; j++ {
		n = n*10 + int64(r.b[j]-'0')
	}
	if j == r.i || (r.b[r.i] == '0' && j-r.i > 1) || (j < len(r.b) && r.b[j] >= '0' && r.b[j] <= '9') {
		return 0, false
	}
	r.i = j
	return n, true
}

// str reads a JSON string holding no escape, control byte or invalid UTF-8.
func (r *envReader) str() (string, bool) {
	if r.i >= len(r.b) || r.b[r.i] != '"' {
		return "", false
	}
	start := r.i + 1
	ascii := true
	for j := start; j < len(r.b); j++ {
		switch c := r.b[j]; {
		case c == '"':
			v := r.b[start:j]
			if !ascii && !utf8.Valid(v) {
				return "", false
			}
			r.last, r.i = start-1, j+1
			return string(v), true
		case c == '\\' || c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return "", false
}

// newPayload returns a zero payload for a known event type, or nil.
func newPayload(typ string) Payload {
	switch typ {
	case TypeTurnStart:
		return new(TurnStart)
	case TypeTurnEnd:
		return new(TurnEnd)
	case TypeStepStart:
		return new(StepStart)
	case TypeStepEnd:
		return new(StepEnd)
	case TypeUserMessage:
		return new(UserMessage)
	case TypePromptBlocked:
		return new(PromptBlocked)
	case TypeContextMessage:
		return new(ContextMessage)
	case TypeSteeringMessage:
		return new(SteeringMessage)
	case TypeRequestHeader:
		return new(RequestHeader)
	case TypeAssistantChunk:
		return new(AssistantChunk)
	case TypeAssistantMessage:
		return new(AssistantMessage)
	case TypeToolCall:
		return new(ToolCall)
	case TypeToolResult:
		return new(ToolResult)
	case TypeHookDecision:
		return new(HookDecision)
	case TypeCompaction:
		return new(Compaction)
	case TypeTodoWrite:
		return new(TodoWrite)
	case TypeSessionMeta:
		return new(SessionMeta)
	case TypeRepair:
		return new(Repair)
	case TypeRetry:
		return new(Retry)
	case TypeFallback:
		return new(Fallback)
	case TypeCacheDrift:
		return new(CacheDrift)
	case TypeCacheBreak:
		return new(CacheBreak)
	case TypeMCPEvent:
		return new(MCPEvent)
	case TypeToolProgress:
		return new(ToolProgress)
	case TypeCompactionProgress:
		return new(CompactionProgress)
	}
	if p := newSubagentPayload(typ); p != nil {
		return p
	}
	return newDurablePayload(typ)
}
