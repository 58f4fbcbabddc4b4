package command

import (
	"encoding/json"
	"strings"

	"github.com/reinhq/rein/tool"
)

// shellResponse is the shell tool's result as the hook format spells a
// Bash result. rein's shell interleaves stdout and stderr on one pipe, so
// stdout holds both and stderr is empty.
type shellResponse struct {
	Stdout      string `json:"stdout"`
	Stderr      string `json:"stderr"`
	Interrupted bool   `json:"interrupted"`
	IsImage     bool   `json:"isImage"`
	ExitCode    *int   `json:"exit_code,omitempty"`
}

// fileResponse is a file tool's result as the hook format spells it.
type fileResponse struct {
	Type     string `json:"type,omitempty"` // Write: create or update
	FilePath string `json:"filePath"`
	// The arguments the result echoes, as the call gave them.
	Content    json.RawMessage `json:"content,omitempty"`
	OldString  json.RawMessage `json:"oldString,omitempty"`
	NewString  json.RawMessage `json:"newString,omitempty"`
	ReplaceAll json.RawMessage `json:"replaceAll,omitempty"`
	Edits      json.RawMessage `json:"edits,omitempty"`
	Success    bool            `json:"success"`
	Output     string          `json:"output,omitempty"`
}

// todoOf is the todo tool's result as TodoWrite's: the list written as
// newTodos (rein does not keep the old list here), with rein's text.
func todoOf(args json.RawMessage, text string) any {
	var in struct {
		Items json.RawMessage `json:"items"`
	}
	_ = json.Unmarshal(args, &in) // a call that ran had valid arguments
	if len(in.Items) == 0 {
		return map[string]any{"output": text}
	}
	return map[string]any{"newTodos": theirTodos(in.Items), "output": text}
}

// toolResponse is tool_response for a call of rein's tool name with args
// and its result: Bash's stdout/stderr/interrupted for the shell, the
// file tools' filePath and the input that changed the file, TodoWrite's
// newTodos, and {"output": text} for every other tool.
func toolResponse(name string, args json.RawMessage, res *tool.Result) json.RawMessage {
	text := ""
	if res != nil {
		text = res.TextOf()
	}
	var v any = map[string]any{"output": text}
	switch name {
	case "shell":
		v = shellOf(text, res)
	case "read", "write", "edit", "multi_edit":
		v = fileOf(name, args, text, res)
	case "todo":
		v = todoOf(args, text)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

func shellOf(text string, res *tool.Result) *shellResponse {
	out := &shellResponse{Stdout: text}
	if res == nil {
		return out
	}
	if code, ok := res.Meta["exit_code"].(int); ok {
		out.ExitCode = &code
		out.Interrupted = code == -1
		// The last paragraph is rein's status line (exit code, time).
		if i := strings.LastIndex(text, "\n\n"); i >= 0 {
			out.Stdout = text[:i+1]
		} else {
			out.Stdout = ""
		}
	}
	return out
}

func fileOf(name string, args json.RawMessage, text string, res *tool.Result) *fileResponse {
	var in map[string]json.RawMessage
	_ = json.Unmarshal(args, &in) // a call that ran had valid arguments
	var path string
	_ = json.Unmarshal(in["path"], &path)
	out := &fileResponse{FilePath: path, Success: res != nil && !res.IsError, Output: text}
	switch name {
	case "write":
		out.Type, out.Content = "update", in["content"]
		if strings.Contains(strings.ToLower(text), "created") {
			out.Type = "create"
		}
	case "edit":
		out.OldString, out.NewString, out.ReplaceAll = in["old_string"], in["new_string"], in["replace_all"]
	case "multi_edit":
		out.Edits = in["edits"]
	case "read":
		out.Type = "text"
		out.Content, _ = json.Marshal(text)
	}
	return out
}
