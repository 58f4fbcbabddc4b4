// Package termmd renders Markdown (CommonMark with GitHub's tables,
// strikethrough, task lists and bare links) as styled lines for a
// terminal of a given width.
//
// It is deliberately small: block structure, emphasis, code and links
// in a light or a dark palette, no syntax highlighting. What it imports
// costs a program almost nothing at start, which matters because the
// rein binary is also what runs inside every sandbox.
package termmd

import (
	"strconv"
	"strings"
	"sync"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/text"
)

var parser = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough,
		extension.TaskList, extension.Linkify))
})

// Render returns src as lines no wider than width terminal cells, styled
// for a dark background when dark is set. Leading and trailing blank
// lines are dropped; a width below 8 is taken as 8.
func Render(src string, width int, dark bool) []string {
	width = max(width, 8)
	b := []byte(src)
	doc := parser().Parser().Parse(text.NewReader(b))
	r := &renderer{src: b, pal: palette(dark)}
	lines := r.blocks(doc, width)
	for i, l := range lines {
		if ansi.StringWidth(l) > width { // nesting deeper than the width has room for
			lines[i] = ansi.Truncate(l, width, "")
		}
	}
	return lines
}

type renderer struct {
	src []byte
	pal *styles
}

// blocks renders the block children of n, a blank line between two.
func (r *renderer) blocks(n ast.Node, width int) []string {
	var out []string
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		lines := r.block(c, width)
		if len(lines) == 0 {
			continue
		}
		if len(out) > 0 && !tightItem(c) {
			out = append(out, "")
		}
		out = append(out, lines...)
	}
	return out
}

// tightItem reports whether c sits in a tight list item, where blocks
// follow one another without a blank line.
func tightItem(c ast.Node) bool {
	item, ok := c.Parent().(*ast.ListItem)
	if !ok {
		return false
	}
	list, ok := item.Parent().(*ast.List)
	return ok && list.IsTight
}

func (r *renderer) block(n ast.Node, width int) []string {
	switch n := n.(type) {
	case *ast.Heading:
		st := r.pal.heading
		if n.Level == 1 {
			st = r.pal.title
		}
		return wrap(r.inlines(n, st), width)
	case *ast.Paragraph, *ast.TextBlock:
		return wrap(r.inlines(n, lipgloss.NewStyle()), width)
	case *ast.List:
		return r.list(n, width)
	case *ast.Blockquote:
		return prefixed(r.blocks(n, width-2), r.pal.quote.Render("│ "), r.pal.quote.Render("│ "))
	case *ast.FencedCodeBlock, *ast.CodeBlock:
		return r.code(n, width)
	case *ast.HTMLBlock:
		return r.raw(n, width, lipgloss.NewStyle())
	case *ast.ThematicBreak:
		return []string{r.pal.quote.Render(strings.Repeat("─", width))}
	case *east.Table:
		return r.table(n, width)
	}
	return r.blocks(n, width)
}

// list renders each item after its marker, the item's other lines
// indented to line up with its first.
func (r *renderer) list(n *ast.List, width int) []string {
	var out []string
	num := n.Start
	markers := make([]string, 0, n.ChildCount())
	indent := 2
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		m := "• "
		if n.IsOrdered() {
			m = strconv.Itoa(num) + string(n.Marker) + " "
			num++
		}
		markers = append(markers, m)
		indent = max(indent, ansi.StringWidth(m))
	}
	i := 0
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		lines := r.blocks(c, width-indent)
		if len(lines) == 0 {
			lines = []string{""}
		}
		if i > 0 && !n.IsTight {
			out = append(out, "")
		}
		first := strings.Repeat(" ", indent-ansi.StringWidth(markers[i])) + r.pal.marker.Render(markers[i])
		out = append(out, prefixed(lines, first, strings.Repeat(" ", indent))...)
		i++
	}
	return out
}

// code renders a code block's lines as they are, tabs expanded, long
// lines broken at the width.
func (r *renderer) code(n ast.Node, width int) []string {
	return r.raw(n, width, r.pal.code)
}

func (r *renderer) raw(n ast.Node, width int, st lipgloss.Style) []string {
	var out []string
	lines := n.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		l := strings.TrimRight(string(seg.Value(r.src)), "\n")
		l = strings.ReplaceAll(l, "\t", "    ")
		for _, part := range breakLine(l, width) {
			out = append(out, st.Render(part))
		}
	}
	return out
}

// prefixed puts first before the first line and rest before the others.
func prefixed(lines []string, first, rest string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		p := rest
		if i == 0 {
			p = first
		}
		out[i] = p + l
	}
	return out
}
