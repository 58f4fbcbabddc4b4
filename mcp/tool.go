package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

// Origin is the origin of MCP tools on tool.call events.
const Origin = tool.OriginMCP

// Tool is one tool of an MCP server, as rein offers it: named
// mcp_<server>_<tool>, with the server's annotations mapped to rein's.
// A call goes to the server's current connection, connecting (or
// reconnecting) first when needed.
type Tool struct {
	srv   *server
	info  ToolInfo
	spec  tool.Spec
	valid *tool.Validator
}

var (
	_ tool.Tool      = (*Tool)(nil)
	_ tool.Validated = (*Tool)(nil)
	_ tool.Originer  = (*Tool)(nil)
)

// Spec returns the tool's spec under its rein name.
func (t *Tool) Spec() tool.Spec { return t.spec }

// Validator returns the tool's compiled argument validator.
func (t *Tool) Validator() *tool.Validator { return t.valid }

// Origin returns "mcp", the origin hosts record on the tool's calls
// (tool.OriginOf reads it, through any wrappers).
func (t *Tool) Origin() string { return Origin }

// Server returns the name of the server the tool belongs to.
func (t *Tool) Server() string { return t.srv.cfg.Name }

// RemoteName returns the server's own name for the tool.
func (t *Tool) RemoteName() string { return t.info.Name }

// Call sends the call to the server. A result the server marks as an
// error is a Result with IsError; a transport failure (the server died,
// the connection dropped, the call timed out) is an error, which the loop
// turns into a tool error result, and the server reconnects in the
// background.
func (t *Tool) Call(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	var id, sess string
	var args json.RawMessage
	if call != nil {
		id, sess, args = string(call.ID), call.Session, call.Args
	}
	return t.srv.call(ctx, t.info.Name, t.spec.Name, id, sess, args)
}

// toolName returns rein's name for a server's tool: mcp_<server>_<tool>,
// sanitised to what providers accept and at most 64 bytes. taken reports
// names already given; a collision gets a suffix made from a hash of the
// server's tool name.
func toolName(server, name string, taken func(string) bool) string {
	base := "mcp_" + sanitize(server) + "_" + sanitize(name)
	if len(base) <= 64 && !taken(base) {
		return base
	}
	suffix := "_" + hashOf(server, name)
	if len(base)+len(suffix) > 64 {
		base = base[:64-len(suffix)]
	}
	n := base + suffix
	for i := 2; taken(n); i++ {
		s := fmt.Sprintf("%s%d", suffix, i)
		b := base
		if len(b)+len(s) > 64 {
			b = b[:64-len(s)]
		}
		n = b + s
	}
	return n
}

// hashOf is a short stable hash of a server's tool name.
func hashOf(server, name string) string {
	sum := sha256.Sum256([]byte(server + "\x00" + name))
	return hex.EncodeToString(sum[:3])
}

// sanitize keeps letters, digits, '_' and '-', replacing runs of anything
// else with one '_', and trims '_' from the ends.
func sanitize(s string) string {
	var b strings.Builder
	under := false
	for _, r := range s {
		ok := r == '_' || r == '-' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9')
		if ok {
			b.WriteRune(r)
			under = r == '_'
			continue
		}
		if !under {
			b.WriteByte('_')
			under = true
		}
	}
	return strings.Trim(b.String(), "_")
}

// annotations maps MCP tool annotations to rein's. A tool without any is
// unannotated (nil), which rein treats with most caution. MCP's defaults
// apply to hints left out: destructive and open-world unless said otherwise.
func annotations(a *sdk.ToolAnnotations) *tool.Annotations {
	if a == nil {
		return nil
	}
	out := &tool.Annotations{
		ReadOnly:   a.ReadOnlyHint,
		Idempotent: a.IdempotentHint,
		OpenWorld:  a.OpenWorldHint == nil || *a.OpenWorldHint,
	}
	if !a.ReadOnlyHint {
		out.Destructive = a.DestructiveHint == nil || *a.DestructiveHint
	}
	return out
}

// infoOf converts a listed tool.
func infoOf(t *sdk.Tool) (ToolInfo, error) {
	info := ToolInfo{Name: t.Name, Title: t.Title, Description: t.Description, Annotations: annotations(t.Annotations)}
	if t.Title == "" && t.Annotations != nil {
		info.Title = t.Annotations.Title
	}
	if t.InputSchema != nil {
		b, err := json.Marshal(t.InputSchema)
		if err != nil {
			return info, fmt.Errorf("tool %q: input schema: %w", t.Name, err)
		}
		info.Schema = b
	}
	if len(info.Schema) == 0 || string(info.Schema) == "null" {
		info.Schema = json.RawMessage(`{"type":"object"}`)
	}
	return info, nil
}

// resultOf converts a tool result into rein's.
func resultOf(r *sdk.CallToolResult) *tool.Result {
	out := &tool.Result{IsError: r.IsError}
	for _, c := range r.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			out.Parts = append(out.Parts, &llm.Text{Text: c.Text})
		case *sdk.ImageContent:
			out.Parts = append(out.Parts, &llm.Image{MediaType: c.MIMEType, Data: c.Data})
		case *sdk.AudioContent:
			out.Parts = append(out.Parts, &llm.Text{Text: fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data))})
		case *sdk.ResourceLink:
			out.Parts = append(out.Parts, &llm.Text{Text: resourceLinkText(c)})
		case *sdk.EmbeddedResource:
			out.Parts = append(out.Parts, embeddedPart(c.Resource))
		default:
			b, _ := json.Marshal(c)
			out.Parts = append(out.Parts, &llm.Text{Text: string(b)})
		}
	}
	if len(out.Parts) == 0 && r.StructuredContent != nil {
		if b, err := json.Marshal(r.StructuredContent); err == nil {
			out.Parts = append(out.Parts, &llm.Text{Text: string(b)})
		}
	}
	return out
}

func resourceLinkText(l *sdk.ResourceLink) string {
	s := "Resource: " + l.URI
	if l.Name != "" {
		s += " (" + l.Name + ")"
	}
	if l.Description != "" {
		s += ": " + l.Description
	}
	return s
}

func embeddedPart(rc *sdk.ResourceContents) llm.Part {
	if rc == nil {
		return &llm.Text{Text: "[empty resource]"}
	}
	if rc.Blob == nil {
		return &llm.Text{Text: rc.Text}
	}
	if strings.HasPrefix(rc.MIMEType, "image/") {
		return &llm.Image{MediaType: rc.MIMEType, Data: rc.Blob}
	}
	if rc.MIMEType == "application/pdf" {
		return &llm.Document{MediaType: rc.MIMEType, Data: rc.Blob, Title: rc.URI}
	}
	return &llm.Text{Text: fmt.Sprintf("[resource %s, %s, %d bytes, base64]\n%s", rc.URI, rc.MIMEType, len(rc.Blob), base64.StdEncoding.EncodeToString(rc.Blob))}
}

// outputBytes is the size of a result's text and inline data.
func outputBytes(r *tool.Result) int {
	n := 0
	for _, p := range r.Parts {
		switch p := p.(type) {
		case *llm.Text:
			n += len(p.Text)
		case *llm.Image:
			n += len(p.Data)
		case *llm.Document:
			n += len(p.Data)
		}
	}
	return n
}
