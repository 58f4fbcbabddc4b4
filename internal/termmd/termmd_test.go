package termmd

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/google/go-cmp/cmp"
)

func plainLines(src string, width int) []string {
	var out []string
	for _, l := range Render(src, width, true) {
		out = append(out, ansi.Strip(l))
	}
	return out
}

func TestRender(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		width int
		want  []string
	}{
		{"heading and paragraph", "# Title\n\nSome **bold**, *italic* and `code`.", 40,
			[]string{"Title", "", "Some bold, italic and code."}},
		{"wrapped at spaces", "one two three four five six", 10,
			[]string{"one two", "three four", "five six"}},
		{"soft and hard breaks", "a\nb  \nc", 20, []string{"a b", "c"}},
		{"long word broken", "abcdefghijkl", 8, []string{"abcdefgh", "ijkl"}},
		{"tight list", "- one\n- two\n  - nested", 20,
			[]string{"• one", "• two", "  • nested"}},
		{"loose ordered list", "3. three\n\n4. four", 20, []string{"3. three", "", "4. four"}},
		{"list item wrapped under its text", "- alpha beta gamma", 12,
			[]string{"• alpha beta", "  gamma"}},
		{"task list", "- [x] done\n- [ ] open", 20, []string{"• ☑ done", "• ☐ open"}},
		{"quote", "> quoted\n> text", 20, []string{"│ quoted text"}},
		{"fenced code kept as is", "```go\nif x {\n\treturn\n}\n```", 40,
			[]string{"if x {", "    return", "}"}},
		{"code broken at the width", "```\nabcdefghij\n```", 8, []string{"abcdefgh", "ij"}},
		{"link with its address", "see [the docs](https://example.com/d)", 60,
			[]string{"see the docs (https://example.com/d)"}},
		{"link whose text is its address", "<https://example.com>", 60, []string{"https://example.com"}},
		{"bare link", "at https://example.com now", 60, []string{"at https://example.com now"}},
		{"escapes and entities", `\*not em\* &amp; &#65;`, 40, []string{"*not em* & A"}},
		{"rule", "a\n\n---\n\nb", 8, []string{"a", "", "────────", "", "b"}},
		{"strikethrough", "~~gone~~ here", 20, []string{"gone here"}},
		{"image", "![a cat](cat.png)", 20, []string{"[image: a cat]"}},
		{"table", "| a | bb |\n|---|--:|\n| ccc | d |", 40,
			[]string{"a   │ bb", "────┼───", "ccc │  d"}},
		{"wide table shares the width", "| aaaaaaaaaa | bbbbbbbbbb |\n|---|---|\n| x | y |", 13,
			[]string{"aaaaa │ bbbbb", "aaaaa │ bbbbb", "──────┼──────", "x     │ y"}},
		{"nesting deeper than the width", ">>>>>>>>>> deep", 8, []string{"│ │ │ │ ", "│ │ │ │ ", "│ │ │ │ ", "│ │ │ │ "}},
		{"empty", "", 20, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, plainLines(tt.src, tt.width)); diff != "" {
				t.Errorf("Render(%q, %d) (-want +got):\n%s", tt.src, tt.width, diff)
			}
		})
	}
}

func TestStylesStayOnTheirLine(t *testing.T) {
	// A bold phrase wrapped over two lines is bold on both, and each line
	// ends with its styles closed.
	lines := Render("**alpha beta gamma delta**", 11, true)
	if len(lines) != 2 {
		t.Fatalf("got %d lines, want 2: %q", len(lines), lines)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "\x1b[") || !strings.HasSuffix(l, "m") {
			t.Errorf("line %q does not open and close its style", l)
		}
	}
}

func TestPalettesDiffer(t *testing.T) {
	d, l := Render("`x`", 10, true), Render("`x`", 10, false)
	if d[0] == l[0] {
		t.Errorf("dark and light render the same: %q", d[0])
	}
	if ansi.Strip(d[0]) != "x" || ansi.Strip(l[0]) != "x" {
		t.Errorf("text differs: %q %q", d[0], l[0])
	}
}

func FuzzRender(f *testing.F) {
	for _, s := range []string{"# h\n\n- a\n- b\n\n```\ncode\n```", "| a | b |\n|---|---|\n| 1 | 2 |",
		"> q\n>> qq", "**b *i* b**", "1. x\n   - y\n     > z", "日本語の文章です。とても長い", "a\tb\tc"} {
		f.Add(s, 20)
	}
	f.Fuzz(func(t *testing.T, src string, width int) {
		width = width%120 + 1
		if width < 0 {
			width = -width
		}
		for _, l := range Render(src, width, true) {
			if w := ansi.StringWidth(l); w > max(width, 8) && !strings.ContainsAny(src, "\x1b") {
				t.Fatalf("line %q is %d wide, over %d", l, w, max(width, 8))
			}
		}
	})
}

func ExampleRender() {
	for _, l := range Render("## Steps\n\n1. Build it.\n2. Run the **tests**.", 30, true) {
		fmt.Println(ansi.Strip(l))
	}
	// Output:
	// Steps
	//
	// 1. Build it.
	// 2. Run the tests.
}
