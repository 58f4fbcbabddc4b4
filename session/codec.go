package session

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/reinhq/rein/internal/jsonesc"
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
	dst = jsonesc.AppendString(dst, string(e.Session))
	dst = append(dst, `,"turn":`...)
	dst = jsonesc.AppendString(dst, string(e.Turn))
	dst = append(dst, `,"run":`...)
	dst = jsonesc.AppendString(dst, string(e.Run))
	if e.ParentRun != "" {
		dst = append(dst, `,"parent_run":`...)
		dst = jsonesc.AppendString(dst, string(e.ParentRun))
	}
	if e.Agent != "" {
		dst = append(dst, `,"agent":`...)
		dst = jsonesc.AppendString(dst, e.Agent)
	}
	dst = append(dst, `,"type":`...)
	dst = jsonesc.AppendString(dst, typ)
	dst = append(dst, `,"data":`...)
	dst, err := AppendPayloadJSON(dst, e.Data)
	if err != nil {
		return dst, err
	}
	return append(dst, '}'), nil
}

// AppendPayloadJSON appends the JSON encoding of an event's data, as
// AppendEventJSON writes its "data", to dst and returns the extended
// slice: an *Unknown payload's raw data byte for byte ("null" when it has
// none), any other as json.Marshal writes it. Stores that keep the data
// apart from the event's header use it.
//
// The payloads of every step (turn and step bounds, messages, request
// headers, tool calls and results) are written directly, without
// reflection; the others, and anything unusual in those, such as raw
// JSON that is not valid, go through encoding/json.
func AppendPayloadJSON(dst []byte, p Payload) ([]byte, error) {
	if out, ok := appendPayloadDirect(dst, p); ok {
		return out, nil
	}
	if u, ok := p.(*Unknown); ok {
		switch {
		case len(u.Raw) == 0:
			return append(dst, "null"...), nil
		case json.Valid(u.Raw):
			return append(dst, u.Raw...), nil
		}
		return dst, fmt.Errorf("session: encode %q event: raw data is not valid JSON", u.Type)
	}
	var body []byte
	var err error
	if m, ok := p.(json.Marshaler); ok {
		// Payloads with parts write valid, compact JSON themselves;
		// calling them directly skips encoding/json's second pass.
		body, err = m.MarshalJSON()
	} else {
		body, err = json.Marshal(p)
	}
	if err != nil {
		return dst, fmt.Errorf("session: encode %s event: %w", p.EventType(), err)
	}
	return append(dst, body...), nil
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
	var d Decoder
	return d.Decode(b)
}

// A Decoder decodes events one after another, as DecodeEvent does, and
// shares the header strings (session, turn, run, agent) an event repeats
// from the one before, so that reading a long log allocates them once per
// turn rather than once per event, and the tool names and call IDs that
// recur from event to event. The zero Decoder is ready to use; it
// is not safe for concurrent use.
type Decoder struct {
	ids    [4]string // the header strings of the last event read directly
	recent recent    // tool names and call IDs read lately
}

// Decode decodes one event from its JSON encoding, as DecodeEvent does.
func (d *Decoder) Decode(b []byte) (Event, error) {
	if w, ok := scanEnvelope(b, &d.ids); ok {
		if p, err := decodePayload(w.Type, w.Data, &d.recent); err == nil {
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
	p, err := decodePayload(w.Type, w.Data, &d.recent)
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
	p, err := decodePayload(typ, data, nil)
	return p, payloadError(typ, err)
}

// DecodePayload decodes the data of an event of type typ, as the
// function DecodePayload does, sharing tool names and call IDs with the
// events d decoded before.
func (d *Decoder) DecodePayload(typ string, data []byte) (Payload, error) {
	p, err := decodePayload(typ, data, &d.recent)
	return p, payloadError(typ, err)
}

// payloadError wraps an error decoding a payload of type typ, or is nil.
func payloadError(typ string, err error) error {
	if err != nil {
		return fmt.Errorf("%w: decode %s event: %w", ErrCorrupt, typ, err)
	}
	return nil
}

func decodePayload(typ string, data []byte, rc *recent) (Payload, error) {
	if bytes.Equal(data, []byte("null")) {
		data = nil
	}
	if p, ok := fastPayload(typ, data, rc); ok {
		return p, nil
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

// fastParts is an llm.PartList inside a payload being decoded by
// encoding/json: its parts are read as the direct decoders read them,
// and by llm.PartList when that gives up.
type fastParts llm.PartList

// UnmarshalJSON decodes an array written by llm.PartList.MarshalJSON.
func (l *fastParts) UnmarshalJSON(b []byte) error {
	r := reader{b: b}
	if parts := r.parts(); !r.bad && r.i == len(b) {
		*l = fastParts(parts)
		return nil
	}
	return (*llm.PartList)(l).UnmarshalJSON(b)
}

// scanEnvelope reads the header of an event laid out exactly as
// AppendEventJSON writes it, with strings that need no unescaping, and
// slices out its data (not yet checked). ok is false for anything else.
func scanEnvelope(b []byte, ids *[4]string) (w eventWire, ok bool) {
	r := reader{b: b}
	if !r.lit(`{"seq":`) {
		return w, false
	}
	w.Seq = r.int()
	if !r.lit(`,"time":`) {
		return w, false
	}
	if q := r.plain(); q == nil || w.Time.UnmarshalJSON(q) != nil {
		return w, false
	}
	var s [3]string
	for k, key := range [3]string{`,"session":`, `,"turn":`, `,"run":`} {
		if !r.lit(key) {
			return w, false
		}
		s[k] = r.strAs(&ids[k])
	}
	w.Session, w.Turn, w.Run = ID(s[0]), TurnID(s[1]), RunID(s[2])
	if r.lit(`,"parent_run":`) {
		if w.ParentRun = RunID(r.str()); w.ParentRun == "" {
			return w, false
		}
	}
	if r.lit(`,"agent":`) {
		if w.Agent = r.strAs(&ids[3]); w.Agent == "" {
			return w, false
		}
	}
	if !r.lit(`,"type":`) {
		return w, false
	}
	if w.Type = r.word(); w.Type == "" || !r.lit(`,"data":`) {
		return w, false
	}
	if len(b) < r.i+2 || b[len(b)-1] != '}' {
		return w, false
	}
	w.Data = b[r.i : len(b)-1]
	return w, true
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
	case TypeDecision:
		return new(Decision)
	}
	if p := newSubagentPayload(typ); p != nil {
		return p
	}
	return newDurablePayload(typ)
}
