package fs

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path"
	"strings"

	"github.com/reinhq/rein/tool"
)

// writeFile replaces rel with data atomically: a temporary file in the
// same directory, renamed over the target.
func (t *tools) writeFile(rel string, data []byte, perm os.FileMode) (fingerprint, error) {
	dir := path.Dir(rel)
	if err := t.p.MkdirAll(dir, 0o755); err != nil {
		return fingerprint{}, err
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := path.Join(dir, ".rein-tmp-"+hex.EncodeToString(rnd[:]))
	f, err := t.p.Open(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fingerprint{}, err
	}
	_, werr := f.Write(data)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = t.p.Rename(tmp, rel)
	}
	if werr != nil {
		t.p.Remove(tmp)
		return fingerprint{}, werr
	}
	fi, err := t.p.Stat(rel)
	if err != nil {
		return fingerprint{}, err
	}
	return fingerprint{size: int64(len(data)), modTime: fi.ModTime(), sum: sha256.Sum256(data)}, nil
}

// checkFresh enforces read-before-edit (B54) for an existing file.
func (t *tools) checkFresh(session, name, rel string, fp fingerprint) *tool.Result {
	st, ok := t.state.get(session, rel)
	if !ok {
		return tool.Errorf("%s has not been read in this session; read it before changing it, so the change is based on its current content", name)
	}
	if st.seen.sum != fp.sum || st.seen.size != fp.size {
		return tool.Errorf("%s changed on disk since you read it; read it again before editing", name)
	}
	return nil
}

type writeArgs struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func (t *tools) writeTool() *tool.Func {
	return &tool.Func{ToolSpec: tool.Spec{
		Name: "write",
		Description: "Write a file in the workspace, creating it and its parent directories or replacing it whole. " +
			"An existing file must have been read first in this session. Prefer edit for changes to part of a file.",
		Schema: schema(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"file path, relative to the workspace root or absolute inside it"},` +
			`"content":{"type":"string","description":"the complete new content"}},` +
			`"required":["path","content"],"additionalProperties":false}`),
		Annotations: &tool.Annotations{Destructive: true, Idempotent: true},
	}, Fn: t.write, SubjectFn: tool.PathSubject}
}

func (t *tools) write(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	var a writeArgs
	if r := tool.DecodeArgs(call, &a); r != nil {
		return r, nil
	}
	if a.Path == "" {
		return tool.Errorf("path is required"), nil
	}
	rel, err := t.p.Rel(a.Path)
	if err != nil {
		return pathError(a.Path, err), nil
	}
	perm := os.FileMode(0o644)
	verb := "Created"
	fi, err := t.p.Stat(a.Path)
	switch {
	case err == nil && fi.IsDir():
		return tool.Errorf("%s is a directory; give a file path", a.Path), nil
	case err == nil:
		old, fp, mode, res := t.load(ctx, a.Path)
		if res != nil {
			return res, nil
		}
		release(old)
		if res := t.checkFresh(call.Session, a.Path, rel, fp); res != nil {
			return res, nil
		}
		perm, verb = mode.Perm(), "Wrote"
	case !errors.Is(err, iofs.ErrNotExist):
		return pathError(a.Path, err), nil
	}
	fp, err := t.writeAny(ctx, rel, []byte(a.Content), perm)
	if err != nil {
		return pathError(a.Path, err), nil
	}
	t.state.put(call.Session, rel, fileState{seen: fp})
	lines := strings.Count(a.Content, "\n")
	if a.Content != "" && !strings.HasSuffix(a.Content, "\n") {
		lines++
	}
	return tool.Text(fmt.Sprintf("%s %s (%s, %s).", verb, a.Path, plural(lines, "line"), humanSize(fp.size))), nil
}

// Edit is one exact-string replacement.
type editOp struct {
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

type editArgs struct {
	Path string `json:"path"`
	editOp
}

type multiEditArgs struct {
	Path  string   `json:"path"`
	Edits []editOp `json:"edits"`
}

const editProps = `"old_string":{"type":"string","description":"the exact text to replace, including whitespace and indentation"},` +
	`"new_string":{"type":"string","description":"the text to put in its place"},` +
	`"replace_all":{"type":"boolean","description":"replace every occurrence (default: old_string must occur exactly once)"}`

func (t *tools) editTool() *tool.Func {
	return &tool.Func{ToolSpec: tool.Spec{
		Name: "edit",
		Description: "Replace exact text in a file: old_string must occur exactly once (add surrounding lines to make it unique) " +
			"unless replace_all is set. The file must have been read first in this session and not changed since.",
		Schema: schema(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"file path, relative to the workspace root or absolute inside it"},` +
			editProps + `},"required":["path","old_string","new_string"],"additionalProperties":false}`),
		Annotations: &tool.Annotations{Destructive: true},
	}, Fn: func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
		var a editArgs
		if r := tool.DecodeArgs(call, &a); r != nil {
			return r, nil
		}
		return t.applyEdits(ctx, call, a.Path, []editOp{a.editOp}), nil
	}, SubjectFn: tool.PathSubject}
}

func (t *tools) multiEditTool() *tool.Func {
	return &tool.Func{ToolSpec: tool.Spec{
		Name: "multi_edit",
		Description: "Make several exact-text replacements in one file, applied in order, each to the result of the one before. " +
			"Either all of them apply or none does. The same rules as edit hold for each.",
		Schema: schema(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"file path, relative to the workspace root or absolute inside it"},` +
			`"edits":{"type":"array","minItems":1,"items":{"type":"object","properties":{` + editProps +
			`},"required":["old_string","new_string"],"additionalProperties":false}}},` +
			`"required":["path","edits"],"additionalProperties":false}`),
		Annotations: &tool.Annotations{Destructive: true},
	}, Fn: func(ctx context.Context, call *tool.Call) (*tool.Result, error) {
		var a multiEditArgs
		if r := tool.DecodeArgs(call, &a); r != nil {
			return r, nil
		}
		if len(a.Edits) == 0 {
			return tool.Errorf("edits is empty; give at least one edit"), nil
		}
		return t.applyEdits(ctx, call, a.Path, a.Edits), nil
	}, SubjectFn: tool.PathSubject}
}

func (t *tools) applyEdits(ctx context.Context, call *tool.Call, name string, edits []editOp) *tool.Result {
	if name == "" {
		return tool.Errorf("path is required")
	}
	rel, err := t.p.Rel(name)
	if err != nil {
		return pathError(name, err)
	}
	data, fp, mode, res := t.load(ctx, name)
	if res != nil {
		return res
	}
	if res := t.checkFresh(call.Session, name, rel, fp); res != nil {
		return res
	}
	binary := isBinary(data)
	content := string(data)
	release(data)
	if binary {
		return tool.Errorf("%s is a binary file; it cannot be edited as text", name)
	}
	total, firstAt := 0, -1
	for i, e := range edits {
		prefix := ""
		if len(edits) > 1 {
			prefix = fmt.Sprintf("edit %d of %d: ", i+1, len(edits))
		}
		next, n, at, msg := replace(content, name, e)
		if msg != "" {
			if len(edits) > 1 {
				msg += "; no edit was applied (edits apply in order, each to the text the ones before it left)"
			}
			return tool.Errorf("%s%s", prefix, msg)
		}
		if firstAt < 0 || i == 0 {
			firstAt = at
		}
		content, total = next, total+n
	}
	fp, err = t.writeAny(ctx, rel, []byte(content), mode.Perm())
	if err != nil {
		return pathError(name, err)
	}
	t.state.put(call.Session, rel, fileState{seen: fp})
	what := "1 occurrence"
	if total != 1 {
		what = fmt.Sprintf("%d occurrences", total)
	}
	var b strings.Builder
	if len(edits) > 1 {
		fmt.Fprintf(&b, "Edited %s: applied %d edits, replaced %s.\n", name, len(edits), what)
	} else {
		fmt.Fprintf(&b, "Edited %s: replaced %s.\n", name, what)
	}
	b.WriteString(snippet(content, firstAt, t.o.MaxLineLength))
	return tool.Text(b.String())
}

// replace applies one edit. at is the byte offset of the first
// replacement; msg is the model-facing reason when it cannot apply.
func replace(content, name string, e editOp) (out string, n, at int, msg string) {
	switch {
	case e.OldString == "":
		return "", 0, 0, "old_string is empty; to create or replace a whole file use write"
	case e.OldString == e.NewString:
		return "", 0, 0, "old_string and new_string are the same; nothing would change"
	}
	count := strings.Count(content, e.OldString)
	if count == 0 && strings.Contains(e.OldString, "\n") && strings.Contains(content, "\r\n") {
		// read shows CRLF files without the CRs: match them as the file has them.
		crlf := editOp{
			OldString:  strings.ReplaceAll(strings.ReplaceAll(e.OldString, "\r\n", "\n"), "\n", "\r\n"),
			NewString:  strings.ReplaceAll(strings.ReplaceAll(e.NewString, "\r\n", "\n"), "\n", "\r\n"),
			ReplaceAll: e.ReplaceAll,
		}
		if strings.Contains(content, crlf.OldString) {
			return replace(content, name, crlf)
		}
	}
	switch {
	case count == 0:
		return "", 0, 0, notFound(content, name, e.OldString)
	case count > 1 && !e.ReplaceAll:
		return "", 0, 0, fmt.Sprintf("old_string occurs %d times in %s (at lines %s); add surrounding lines to make it unique, or set replace_all to replace every one",
			count, name, occurrenceLines(content, e.OldString, 5))
	}
	at = strings.Index(content, e.OldString)
	if e.ReplaceAll {
		return strings.ReplaceAll(content, e.OldString, e.NewString), count, at, ""
	}
	return content[:at] + e.NewString + content[at+len(e.OldString):], 1, at, ""
}

func occurrenceLines(content, s string, max int) string {
	var lines []string
	off := 0
	for len(lines) < max {
		i := strings.Index(content[off:], s)
		if i < 0 {
			break
		}
		lines = append(lines, fmt.Sprint(strings.Count(content[:off+i], "\n")+1))
		off += i + len(s)
	}
	if rest := strings.Count(content[off:], s); rest > 0 {
		lines = append(lines, "…")
	}
	return strings.Join(lines, ", ")
}

// notFound explains a missing old_string and shows the most similar line.
func notFound(content, name, old string) string {
	msg := fmt.Sprintf("old_string was not found in %s", name)
	var probe string
	for _, l := range strings.Split(old, "\n") {
		if strings.TrimSpace(l) != "" {
			probe = strings.TrimSpace(l)
			break
		}
	}
	if probe == "" || content == "" {
		return msg + "; read the file again to see its current content"
	}
	best, bestLine, bestScore := "", 0, -1.0
	for i, l := range strings.Split(content, "\n") {
		if i >= 20000 {
			break
		}
		tl := strings.TrimSpace(l)
		if tl == "" {
			continue
		}
		if s := similarity(probe, tl); s > bestScore {
			best, bestLine, bestScore = l, i+1, s
		}
	}
	if bestScore < 0.5 {
		return msg + "; no line is close to it, read the file again to see its current content"
	}
	if len(best) > 200 {
		best = best[:200] + "…"
	}
	return fmt.Sprintf("%s. The most similar line is %d: %q; match whitespace, indentation and escaping exactly, or read the file again", msg, bestLine, best)
}

// similarity is 1 - edit distance / longer length, on at most 200 bytes.
func similarity(a, b string) float64 {
	a, b = a[:min(len(a), 200)], b[:min(len(b), 200)]
	if a == b {
		return 1
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return 1 - float64(prev[len(b)])/float64(max(len(a), len(b)))
}

// snippet shows the lines around byte offset at, numbered.
func snippet(content string, at, maxLen int) string {
	if at < 0 {
		return ""
	}
	line := strings.Count(content[:at], "\n") + 1
	lines := strings.Split(content, "\n")
	if strings.HasSuffix(content, "\n") {
		lines = lines[:len(lines)-1]
	}
	from, to := max(line-3, 1), min(line+6, len(lines))
	var out []byte
	for n := from; n <= to; n++ {
		out = appendNumbered(out, n, []byte(lines[n-1]), maxLen)
	}
	return string(bytes.TrimRight(out, "\n"))
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
