package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/reinhq/rein/internal/jsonesc"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/provider/internal/wirebody"
)

// bodyCache keeps the encoded messages, tools and system sections of the
// last request, so that the next request of the same conversation encodes
// only what is new: a request is the kept prefix plus the newest
// messages. Cache markers are placed anew for every request and written
// between the kept bytes, so a moved breakpoint costs nothing. It holds
// one conversation: a request that shares nothing with the last one
// replaces it all.
type bodyCache struct {
	msgs    []encMsg
	keys    []wirebody.Key // of msgs, apart: every request checks them all
	tools   []encTool
	system  []encText
	turns   []turnSpan
	sysMsgs []int // the system messages with text
	hinted  []int // the turns with an explicit cache hint
	marks   []mark
	// The settled prefix: the bytes of turns [0, settled) of the messages
	// array, which carry no cache marker. It is only appended to.
	settled int
	prefix  []byte
	offs    []int // where each settled turn starts in prefix
}

type encTool struct {
	name, desc string
	schema     []byte // a copy of the one given, to recognise the tool next time
	buf        []byte // up to where its cache_control goes
}

type encText struct {
	text string
	buf  []byte
	cc   int
}

// turnSpan is one message on the wire: req.Messages[from:to] merged, the
// ones of role and with blocks (system and empty messages are skipped).
type turnSpan struct {
	role     llm.Role
	from, to int
	sorted   bool // tool results already lead
}

// body is one request's body under construction.
type body struct {
	c     *bodyCache
	req   *llm.Request
	model string
}

// build returns the Messages API body for req ("stream": true included
// unless count, which leaves out what count_tokens does not take). c may
// be a fresh cache.
func build(c *bodyCache, req *llm.Request, cfg buildConfig, count bool) (wirebody.Body, error) {
	var none wirebody.Body
	if req == nil {
		return none, fmt.Errorf("anthropic: nil request")
	}
	b := body{c: c, req: req, model: req.Model}
	if b.model == "" {
		b.model = cfg.model
	}
	if b.model == "" {
		return none, fmt.Errorf("anthropic: request has no model; set Request.Model or Options.Model (e.g. %q)", "claude-sonnet-4-5")
	}
	if err := c.encodeTools(req.Tools); err != nil {
		return none, err
	}
	if len(req.Tools) == 0 && (req.ToolChoice.Mode == llm.ToolChoiceTool || req.ToolChoice.Mode == llm.ToolChoiceRequired) {
		return none, fmt.Errorf("anthropic: tool choice %q needs tools; add the tool to Request.Tools", req.ToolChoice.Mode)
	}
	c.encodeSystem(req.System)
	first, err := c.encodeMessages(req.Messages, cfg.provider)
	if err != nil {
		c.forget()
		return none, err
	}
	c.spanTurns(first)
	if len(c.turns) == 0 {
		return none, fmt.Errorf("anthropic: request has no messages to send; add a user message")
	}
	s, err := sampling(req, cfg)
	if err != nil {
		return none, err
	}
	c.placeMarks(req)
	c.settle()
	return b.write(s, count)
}

// encodeTools encodes the tools that changed since the last request.
func (c *bodyCache) encodeTools(specs []llm.ToolSpec) error {
	if len(c.tools) > len(specs) {
		clear(c.tools[len(specs):])
		c.tools = c.tools[:len(specs)]
	}
	for i := range specs {
		ts := &specs[i]
		if i < len(c.tools) && c.tools[i].name == ts.Name && c.tools[i].desc == ts.Description && bytes.Equal(c.tools[i].schema, ts.Schema) {
			continue
		}
		t, err := encodeTool(i, ts)
		if err != nil {
			c.tools = c.tools[:min(i, len(c.tools))]
			return err
		}
		if i < len(c.tools) {
			c.tools[i] = t
		} else {
			c.tools = append(c.tools, t)
		}
	}
	return nil
}

func encodeTool(i int, ts *llm.ToolSpec) (encTool, error) {
	if ts.Name == "" {
		return encTool{}, fmt.Errorf("anthropic: tool %d has no name", i)
	}
	schema := bytes.TrimSpace(ts.Schema)
	if len(schema) == 0 || string(schema) == "null" {
		schema = []byte(`{"type":"object","properties":{}}`)
	} else if schema[0] != '{' || !json.Valid(schema) {
		return encTool{}, fmt.Errorf("anthropic: tool %q: schema is not a JSON object", ts.Name)
	}
	buf := []byte(`{"input_schema":`)
	buf = jsonesc.AppendRaw(buf, schema)
	buf = append(buf, `,"name":`...)
	buf = jsonesc.AppendString(buf, ts.Name)
	if ts.Description != "" {
		buf = append(buf, `,"description":`...)
		buf = jsonesc.AppendString(buf, ts.Description)
	}
	return encTool{name: ts.Name, desc: ts.Description, schema: bytes.Clone(ts.Schema), buf: buf}, nil
}

// encodeSystem encodes the system sections that changed.
func (c *bodyCache) encodeSystem(sections []llm.Text) {
	k := 0
	for i := range sections {
		t := sections[i].Text
		if t == "" {
			continue
		}
		if k < len(c.system) && c.system[k].text == t {
			k++
			continue
		}
		buf, cc := appendText(nil, t)
		if e := (encText{text: t, buf: buf, cc: cc}); k < len(c.system) {
			c.system[k] = e
		} else {
			c.system = append(c.system, e)
		}
		k++
	}
	clear(c.system[k:])
	c.system = c.system[:k]
}

// encodeMessages keeps the encoding of each message that is the same as
// the one at its index in the last request and encodes the others. It
// returns the index of the first message that is not kept.
func (c *bodyCache) encodeMessages(msgs []llm.Message, provider string) (int, error) {
	first := len(msgs)
	if len(c.msgs) > len(msgs) {
		clear(c.msgs[len(msgs):])
		clear(c.keys[len(msgs):])
		c.msgs, c.keys = c.msgs[:len(msgs)], c.keys[:len(msgs)]
	}
	for i := range msgs {
		m := &msgs[i]
		if i < len(c.keys) && c.keys[i].Is(m) {
			continue
		}
		first = min(first, i)
		e, err := encodeMessage(m, provider)
		if err != nil {
			n := min(i, len(c.msgs))
			c.msgs, c.keys = c.msgs[:n], c.keys[:n]
			return i, fmt.Errorf("anthropic: message %d: %w", i, err)
		}
		if i < len(c.msgs) {
			c.msgs[i], c.keys[i] = e, wirebody.KeyOf(m)
		} else {
			c.msgs, c.keys = append(c.msgs, e), append(c.keys, wirebody.KeyOf(m))
		}
	}
	return first, nil
}
