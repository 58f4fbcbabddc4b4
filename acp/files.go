package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/fs"
	"github.com/reinhq/rein/tool/sandbox"
)

// ClientTools returns tools with the editor's part in them, where the
// editor offers it in initialize:
//
//   - terminals: the shell tool's commands run in an editor terminal,
//     shown live beside the tool call, background ones too (task_output,
//     task_wait and task_kill reach those by their ids); the command
//     rules of policy are checked first;
//   - fs.readTextFile: read also returns the editor's buffer when it has
//     unsaved changes, so the model sees what the person sees;
//   - fs.writeTextFile: write, edit and multi_edit put the new content
//     through the editor (fs/write_text_file), so its buffers and undo
//     history follow; the tools must be those fs.NewTools made.
//
// The checks stay with rein's tools: paths confined by policy (nil: the
// session's directory), the read-before-edit record, and the target
// opened for writing through the policy before the editor is asked. Other
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
		case (name == "task_output" || name == "task_wait" || name == "task_kill") && r.Client.Terminal:
			out[i] = &taskTool{c}
		case name == "read" && r.Client.Fs.ReadTextFile:
			out[i] = &bufferRead{c}
		}
	}
	if r.Client.Fs.WriteTextFile {
		out = fs.WithFiles(out, &editorFiles{srv: r.srv, l: r.live})
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

// editorFiles writes files through the editor: fs/write_text_file.
type editorFiles struct {
	srv *Server
	l   *live
}

func (e *editorFiles) WriteFile(ctx context.Context, abs string, data []byte, perm os.FileMode) error {
	if _, err := e.srv.conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: e.l.id, Path: abs, Content: string(data)}); err != nil {
		return fmt.Errorf("the editor did not write the file (%w); try again, or ask the user to check the editor", err)
	}
	return nil
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
