package command

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/reinhq/rein/tool/todo"
	"github.com/reinhq/rein/tool/vocab"
)

// Vocab is one row of the mapping between a rein tool and the name and
// input fields hook programs written for Claude Code expect. The same row
// translates a call out to a command (tool_name, tool_input) and a
// command's updatedInput back into rein's arguments.
type Vocab = vocab.Row

// Vocabulary is the one mapping table between rein's tool names and
// fields and the hook format's (vocab.Table), used in both directions:
// matchers, tool_name, tool_input and tool_response going out,
// updatedInput coming back.
var Vocabulary = vocab.Table

// vocabOf returns the row of rein's tool name, or nil.
func vocabOf(name string) *Vocab {
	for i := range Vocabulary {
		if Vocabulary[i].Tool == name {
			return &Vocabulary[i]
		}
	}
	return nil
}

// pathField reports whether a rein field is a path, sent in both
// spellings.
func pathField(f string) bool { return f == "path" }

// theirName is the name a command is told for rein's tool name: the
// table's, mcp__SERVER__TOOL for an MCP tool (servers names the known MCP
// servers, so a server whose name holds "_" splits right), or rein's own.
func theirName(name string, servers []string) string {
	if v := vocabOf(name); v != nil {
		return v.Theirs
	}
	if c := mcpNames(name, servers); len(c) > 0 {
		return c[0]
	}
	return name
}

// mcpNames returns the spellings mcp__SERVER__TOOL of rein's MCP tool name
// mcp_SERVER_TOOL. With a known server that prefixes the name (the longest
// wins) there is one; otherwise one per way to split it, at the first
// underscore first.
func mcpNames(name string, servers []string) []string {
	rest, ok := strings.CutPrefix(name, "mcp_")
	if !ok || strings.HasPrefix(rest, "_") {
		return nil
	}
	best := ""
	for _, s := range servers {
		if len(s) > len(best) && len(rest) > len(s)+1 && strings.HasPrefix(rest, s+"_") {
			best = s
		}
	}
	if best != "" {
		return []string{"mcp__" + best + "__" + rest[len(best)+1:]}
	}
	var out []string
	for i := 0; i < len(rest); i++ {
		if rest[i] == '_' && i > 0 && i < len(rest)-1 {
			out = append(out, "mcp__"+rest[:i]+"__"+rest[i+1:])
		}
	}
	return out
}

// outInput is a call's arguments in the hook format's fields.
func outInput(name string, args json.RawMessage) json.RawMessage {
	if len(args) == 0 {
		return json.RawMessage("{}")
	}
	v := vocabOf(name)
	if v == nil || (len(v.Fields) == 0 && !v.TimeoutMillis) {
		return args
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return args
	}
	for _, f := range v.Fields {
		val, ok := m[f[0]]
		if !ok {
			continue
		}
		if _, has := m[f[1]]; !has {
			m[f[1]] = val
		}
		if !pathField(f[0]) {
			delete(m, f[0])
		}
	}
	if v.TimeoutMillis {
		scaleNumber(m, "timeout", func(s float64) float64 { return s * 1000 })
	}
	if name == todo.Name {
		m["todos"] = theirTodos(m["todos"])
	}
	b, err := json.Marshal(m)
	if err != nil {
		return args
	}
	return b
}

// applyUpdate merges a command's updatedInput over args (shallow, so a
// hook may return only the fields it changes) and maps its fields back to
// rein's through the table: file_path to path, todos to items (without
// the fields of theirs rein's list has no place for), a shell timeout
// from milliseconds to seconds. The result is validated by the agent.
func applyUpdate(name string, args, update json.RawMessage) (json.RawMessage, error) {
	var base map[string]json.RawMessage
	if len(args) > 0 {
		if err := json.Unmarshal(args, &base); err != nil {
			base = nil
		}
	}
	if base == nil {
		base = map[string]json.RawMessage{}
	}
	var upd map[string]json.RawMessage
	if err := json.Unmarshal(update, &upd); err != nil {
		return nil, err
	}
	v := vocabOf(name)
	if v != nil && v.TimeoutMillis {
		scaleNumber(upd, "timeout", func(ms float64) float64 { return ms / 1000 })
	}
	old := map[string]json.RawMessage{}
	if v != nil {
		for _, f := range v.Fields {
			old[f[0]] = base[f[0]]
		}
	}
	for k, val := range upd {
		base[k] = val
	}
	if v != nil {
		for _, f := range v.Fields {
			theirs, ok := base[f[1]]
			if !ok {
				continue
			}
			// Their field wins when the hook changed it, or when rein's was
			// not changed.
			if _, setOurs := upd[f[0]]; !setOurs || !jsonEqual(theirs, old[f[0]]) {
				base[f[0]] = theirs
			}
			delete(base, f[1])
		}
	}
	if name == todo.Name {
		dropTheirTodoFields(base)
	}
	return json.Marshal(base)
}

// theirTodoOnly are the fields of a TodoWrite todo that rein's todo item
// has no counterpart for: activeForm (the step as shown while it is in
// progress) and priority (of earlier versions of the format).
var theirTodoOnly = []string{"activeForm", "priority"}

// theirTodos is a todo list as the hook format writes it: each item with
// an activeForm, which the format requires and rein's items do not have,
// taken from its content. A list it cannot read is left as it is.
func theirTodos(items json.RawMessage) json.RawMessage {
	var list []map[string]json.RawMessage
	if json.Unmarshal(items, &list) != nil {
		return items
	}
	for _, it := range list {
		if _, ok := it["activeForm"]; !ok && it["content"] != nil {
			it["activeForm"] = it["content"]
		}
	}
	b, err := json.Marshal(list)
	if err != nil {
		return items
	}
	return b
}

// dropTheirTodoFields removes theirTodoOnly from each element of the
// items a hook returned, so a list in the hook format's shape is taken up;
// anything else is left for validation to judge.
func dropTheirTodoFields(base map[string]json.RawMessage) {
	var items []map[string]json.RawMessage
	if json.Unmarshal(base["items"], &items) != nil {
		return
	}
	for _, it := range items {
		for _, f := range theirTodoOnly {
			delete(it, f)
		}
	}
	if b, err := json.Marshal(items); err == nil {
		base["items"] = b
	}
}

// scaleNumber replaces m[key] by f of it when it is a number.
func scaleNumber(m map[string]json.RawMessage, key string, f func(float64) float64) {
	raw, ok := m[key]
	if !ok {
		return
	}
	var n float64
	if json.Unmarshal(raw, &n) != nil {
		return
	}
	if b, err := json.Marshal(f(n)); err == nil {
		m[key] = b
	}
}

func jsonEqual(a, b json.RawMessage) bool { return string(a) == string(b) }

func sortStrings(s []string) { slices.Sort(s) }
