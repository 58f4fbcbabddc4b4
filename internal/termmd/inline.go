package termmd

import (
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/yuin/goldmark/ast"
	east "github.com/yuin/goldmark/extension/ast"
	"github.com/yuin/goldmark/util"
)

// frag is a run of inline text in one style; a text of "\n" is a hard
// line break.
type frag struct {
	text string
	st   lipgloss.Style
}

// inlines flattens the inline children of n into styled runs.
func (r *renderer) inlines(n ast.Node, st lipgloss.Style) []frag {
	var out []frag
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		out = r.inline(out, c, st)
	}
	return out
}

func (r *renderer) inline(out []frag, n ast.Node, st lipgloss.Style) []frag {
	switch n := n.(type) {
	case *ast.Text:
		v := n.Segment.Value(r.src)
		if !n.IsRaw() {
			v = unescape(v)
		}
		out = append(out, frag{string(v), st})
		switch {
		case n.HardLineBreak():
			out = append(out, frag{"\n", st})
		case n.SoftLineBreak():
			out = append(out, frag{" ", st})
		}
		return out
	case *ast.String:
		v := n.Value
		if !n.IsRaw() {
			v = unescape(v)
		}
		return append(out, frag{string(v), st})
	case *ast.CodeSpan:
		var b strings.Builder
		for c := n.FirstChild(); c != nil; c = c.NextSibling() {
			if t, ok := c.(*ast.Text); ok {
				b.Write(t.Segment.Value(r.src))
			}
		}
		return append(out, frag{strings.ReplaceAll(b.String(), "\n", " "), r.pal.code})
	case *ast.Emphasis:
		if n.Level >= 2 {
			st = st.Bold(true)
		} else {
			st = st.Italic(true)
		}
	case *east.Strikethrough:
		st = st.Strikethrough(true)
	case *ast.Link:
		return append(out, r.linked(n)...)
	case *ast.AutoLink:
		return append(out, frag{string(n.Label(r.src)), r.pal.link})
	case *ast.Image:
		alt := strings.TrimSpace(plain(r.inlines(n, st)))
		return append(out, frag{"[image: " + alt + "]", r.pal.quote})
	case *ast.RawHTML:
		segs := n.Segments
		for i := 0; i < segs.Len(); i++ {
			s := segs.At(i)
			out = append(out, frag{string(s.Value(r.src)), st})
		}
		return out
	case *east.TaskCheckBox:
		box := "☐ "
		if n.IsChecked {
			box = "☑ "
		}
		return append(out, frag{box, r.pal.marker})
	}
	for c := n.FirstChild(); c != nil; c = c.NextSibling() {
		out = r.inline(out, c, st)
	}
	return out
}

// linked is a link's text, and its address after it when the text does
// not already say it.
func (r *renderer) linked(n *ast.Link) []frag {
	out := r.inlines(n, r.pal.link)
	dest := string(n.Destination)
	if dest != "" && plain(out) != dest {
		out = append(out, frag{" (" + dest + ")", r.pal.quote})
	}
	return out
}

// plain is the text of runs without their styles.
func plain(fs []frag) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(f.text)
	}
	return b.String()
}

// unescape resolves backslash escapes and character references, as a
// renderer to HTML would.
func unescape(v []byte) []byte {
	return util.ResolveEntityNames(util.ResolveNumericReferences(util.UnescapePunctuations(v)))
}
