package termmd

import (
	"strings"

	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"
	east "github.com/yuin/goldmark/extension/ast"
)

// table renders a table's cells in columns split by │, the header
// underlined by a rule. Columns too wide for the width share it, each
// cell wrapped within its column.
func (r *renderer) table(n *east.Table, width int) []string {
	var rows [][][]frag
	for row := n.FirstChild(); row != nil; row = row.NextSibling() {
		var cells [][]frag
		st := lipgloss.NewStyle()
		if _, head := row.(*east.TableHeader); head {
			st = st.Bold(true)
		}
		for c := row.FirstChild(); c != nil; c = c.NextSibling() {
			cells = append(cells, r.inlines(c, st))
		}
		rows = append(rows, cells)
	}
	cols := columnWidths(rows, width)
	if len(cols) == 0 {
		return nil
	}
	sep := r.pal.quote.Render(" │ ")
	var out []string
	for i, cells := range rows {
		out = append(out, tableRow(cells, cols, n.Alignments, sep)...)
		if i == 0 {
			rule := make([]string, len(cols))
			for j, w := range cols {
				rule[j] = strings.Repeat("─", w)
			}
			out = append(out, r.pal.quote.Render(strings.Join(rule, "─┼─")))
		}
	}
	return out
}

// columnWidths gives each column the width of its widest cell, or, when
// they do not fit, shares what there is in proportion.
func columnWidths(rows [][][]frag, width int) []int {
	var cols []int
	for _, cells := range rows {
		for j, c := range cells {
			if j >= len(cols) {
				cols = append(cols, 1)
			}
			cols[j] = max(cols[j], ansi.StringWidth(plain(c)))
		}
	}
	room := width - 3*(len(cols)-1)
	total := 0
	for _, w := range cols {
		total += w
	}
	if total <= room || len(cols) == 0 {
		return cols
	}
	for j, w := range cols {
		cols[j] = max(1, w*max(room, len(cols))/total)
	}
	return cols
}

// tableRow renders one row, each cell wrapped to its column.
func tableRow(cells [][]frag, cols []int, align []east.Alignment, sep string) []string {
	wrapped := make([][]string, len(cols))
	height := 1
	for j := range cols {
		var c []frag
		if j < len(cells) {
			c = cells[j]
		}
		wrapped[j] = wrap(c, cols[j])
		height = max(height, len(wrapped[j]))
	}
	out := make([]string, height)
	for line := range out {
		parts := make([]string, len(cols))
		for j, w := range cols {
			s := ""
			if line < len(wrapped[j]) {
				s = wrapped[j][line]
			}
			a := east.AlignLeft
			if j < len(align) {
				a = align[j]
			}
			parts[j] = pad(s, w, a)
		}
		out[line] = strings.TrimRight(strings.Join(parts, sep), " ")
	}
	return out
}

func pad(s string, w int, a east.Alignment) string {
	gap := max(0, w-ansi.StringWidth(s))
	switch a {
	case east.AlignRight:
		return strings.Repeat(" ", gap) + s
	case east.AlignCenter:
		return strings.Repeat(" ", gap/2) + s + strings.Repeat(" ", gap-gap/2)
	}
	return s + strings.Repeat(" ", gap)
}
