package acp

import (
	"context"
	"encoding/json"
	"path/filepath"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/sandbox"
)

// ClientTools returns tools with the editor's part in them, where the
// editor offers it in initialize:
//
//   - terminals: the shell tool's foreground commands run in an editor
//     terminal, shown live beside the tool call (background commands stay
//     with rein's shell); the command rules of policy are checked first;
//   - fs.readTextFile: read also returns the editor's buffer when it has
//     unsaved changes, so the model sees what the person sees;
//   - fs.writeTextFile: after write, edit or multi_edit changed a file,
//     its new content is handed to the editor.
//
// File access itself stays with rein's tools, confined by policy (nil: the
// session's directory) and keeping their read-before-edit checks. Other
// tools are returned as they are.
func (r *AgentRequest) ClientTools(tools []tool.Tool, policy *sandbox.Policy) []tool.Tool {
	if r.live == nil {
		return tools
	}
	if policy == nil {
		policy = &sandbox.Policy{Root: r.Cwd}
	}
	out := make([]tool.Tool, len(tools))
	for i, t := range tools {
		out[i] = t
		c := clientTool{inner: t, srv: r.srv, l: r.live, policy: policy}
		switch name := t.Spec().Name; {
		case name == "shell" && r.Client.Terminal:
			out[i] = &terminalShell{c}
		case name == "read" && r.Client.Fs.ReadTextFile:
			out[i] = &bufferRead{c}
		case (name == "write" || name == "edit" || name == "multi_edit") && r.Client.Fs.WriteTextFile:
			out[i] = &bufferWrite{c}
		}
	}
	return out
}

// clientTool is one of rein's tools with the editor's part added; it has
// the tool's spec, so the model sees no difference.
type clientTool struct {
	inner  tool.Tool
	srv    *Server
	l      *live
	policy *sandbox.Policy
}

func (t *clientTool) Spec() tool.Spec { return t.inner.Spec() }

// maxBufferBytes bounds the editor buffer text a read adds for the model.
const maxBufferBytes = 100_000

// bufferRead is rein's read tool with the editor's view added: when the
// file has unsaved changes in the editor, the result also carries the
// buffer's text. The read itself goes through rein's tool, so workspace
// confinement and the read-before-edit record stay rein's.
type bufferRead struct{ clientTool }

func (t *bufferRead) Call(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	res, err := t.inner.Call(ctx, call)
	if err != nil || res == nil || res.IsError || !allText(res.Parts) {
		return res, err
	}
	abs := callPath(call.Args, t.l.cwd)
	if abs == "" {
		return res, nil
	}
	disk, derr := t.policy.ReadFile(abs, nil, maxDiffBytes)
	buf, berr := t.srv.conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: t.l.id, Path: abs})
	if derr != nil || berr != nil || buf.Content == string(disk) {
		return res, nil
	}
	text := buf.Content
	note := "\n\nThe editor has unsaved changes to this file. Its buffer reads:\n"
	if len(text) > maxBufferBytes {
		text = text[:maxBufferBytes]
		note = "\n\nThe editor has unsaved changes to this file. The first 100000 bytes of its buffer read:\n"
	}
	out := &tool.Result{Parts: append(append([]llm.Part(nil), res.Parts...),
		&llm.Text{Text: note + text + "\n\nEdits apply to the file on disk; ask the user to save the buffer first if they should build on it."}),
		Meta: res.Meta}
	return out, nil
}

// bufferWrite is one of rein's editing tools whose result the editor is
// handed: after the tool changed the file on disk (with its checks), the
// new content goes to the editor with fs/write_text_file, so an open
// buffer shows it and the editor can track the change.
type bufferWrite struct{ clientTool }

func (t *bufferWrite) Call(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	res, err := t.inner.Call(ctx, call)
	if err != nil || res == nil || res.IsError {
		return res, err
	}
	abs := callPath(call.Args, t.l.cwd)
	if abs == "" {
		return res, nil
	}
	b, rerr := t.policy.ReadFile(abs, nil, maxDiffBytes)
	if rerr != nil {
		return res, nil
	}
	if _, werr := t.srv.conn.WriteTextFile(context.WithoutCancel(ctx), sdk.WriteTextFileRequest{SessionId: t.l.id, Path: abs, Content: string(b)}); werr != nil {
		t.srv.log.Warn("acp: hand an edit to the editor", "path", abs, "err", werr)
	}
	return res, nil
}

// callPath is the absolute path a file tool's call names, or "".
func callPath(args json.RawMessage, cwd string) string {
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(args, &a) != nil || a.Path == "" {
		return ""
	}
	if filepath.IsAbs(a.Path) {
		return filepath.Clean(a.Path)
	}
	return filepath.Join(cwd, a.Path)
}

func allText(parts []llm.Part) bool {
	for _, p := range parts {
		if _, ok := p.(*llm.Text); !ok {
			return false
		}
	}
	return true
}
