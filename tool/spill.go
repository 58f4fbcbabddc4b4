package tool

import (
	"fmt"
	"maps"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/reinhq/rein/llm"
)

// MetaSpillPath is the Result.Meta key holding the file a spilled result
// was saved to.
const MetaSpillPath = "tool.spill_path"

// Spill keeps a large result from flooding the model's context. When the
// text of res is longer than budget bytes, the whole text is written to a
// new file in dir (created if missing, readable only by the owner) and the
// result's text becomes its head followed by the marker
//
//	[… N bytes elided; full output in <path>]
//
// so the model can read the rest when it needs it. Non-text parts, the
// error flag and Meta are kept; Meta gains MetaSpillPath. A result within
// budget, or a budget <= 0, returns res itself.
func Spill(res *Result, budget int, dir string) (*Result, error) {
	if res == nil || budget <= 0 {
		return res, nil
	}
	size := 0
	texts := 0
	for _, p := range res.Parts {
		if t, ok := p.(*llm.Text); ok {
			size += len(t.Text)
			texts++
		}
	}
	if texts > 1 {
		size += texts - 1 // the newlines TextOf puts between parts
	}
	if size <= budget {
		return res, nil
	}
	full := res.TextOf()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("tool: spill: %w; set a writable spill directory", err)
	}
	f, err := os.CreateTemp(dir, "result-*.txt")
	if err != nil {
		return nil, fmt.Errorf("tool: spill: %w; set a writable spill directory", err)
	}
	path := f.Name()
	_, werr := f.WriteString(full)
	cerr := f.Close()
	if werr != nil || cerr != nil {
		os.Remove(path)
		if werr == nil {
			werr = cerr
		}
		return nil, fmt.Errorf("tool: spill to %s: %w", path, werr)
	}

	// The head leaves room for the marker so the model gets about budget
	// bytes in all.
	markerLen := len(fmt.Sprintf("\n[… %d bytes elided; full output in %s]", len(full), path))
	head := headOf(full, max(budget-markerLen, budget/4))
	marker := fmt.Sprintf("[… %d bytes elided; full output in %s]", len(full)-len(head), path)
	text := marker
	if head != "" {
		text = head + "\n" + marker
	}

	out := &Result{IsError: res.IsError, Meta: maps.Clone(res.Meta)}
	out.Parts = append(out.Parts, &llm.Text{Text: text})
	for _, p := range res.Parts {
		if _, ok := p.(*llm.Text); !ok {
			out.Parts = append(out.Parts, p)
		}
	}
	out.WithMeta(MetaSpillPath, path)
	return out, nil
}

// headOf returns at most n bytes from the start of s, cut at a line end
// when one is near the limit and never inside a UTF-8 sequence.
func headOf(s string, n int) string {
	if n >= len(s) {
		return s
	}
	if n <= 0 {
		return ""
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	head := s[:n]
	if i := strings.LastIndexByte(head, '\n'); i >= 0 && i >= n*3/4 {
		head = head[:i]
	}
	return head
}
