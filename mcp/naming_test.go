package mcp

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/tool"
)

func TestToolName(t *testing.T) {
	long := strings.Repeat("x", 80)
	tests := []struct {
		name, server, tool string
		taken              []string
		want               string
	}{
		{"plain", "everything", "echo", nil, "mcp_everything_echo"},
		{"hyphen kept", "everything", "get-sum", nil, "mcp_everything_get-sum"},
		{"dots and spaces", "my.files", "read file!", nil, "mcp_my_files_read_file"},
		{"unicode", "wëb", "fétch", nil, "mcp_w_b_f_tch"},
		{"collision gets a hash", "a", "b_c", []string{"mcp_a_b_c"}, "mcp_a_b_c_" + hash6("a", "b_c")},
		{"long name cut with hash", "srv", long, nil, ("mcp_srv_" + long)[:57] + "_" + hash6("srv", long)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := toolName(tt.server, tt.tool, func(n string) bool {
				for _, x := range tt.taken {
					if x == n {
						return true
					}
				}
				return false
			})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("toolName(%q, %q) (-want +got):\n%s", tt.server, tt.tool, diff)
			}
			if !tool.ValidName(got) {
				t.Errorf("toolName(%q, %q) = %q, not a valid tool name", tt.server, tt.tool, got)
			}
		})
	}
}

func hash6(server, name string) string { return hashOf(server, name) }

func TestAnnotations(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name string
		in   *sdk.ToolAnnotations
		want *tool.Annotations
	}{
		{"none is unannotated", nil, nil},
		{"empty takes MCP defaults", &sdk.ToolAnnotations{}, &tool.Annotations{Destructive: true, OpenWorld: true}},
		{"read-only", &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: &no}, &tool.Annotations{ReadOnly: true}},
		{"read-only ignores destructive", &sdk.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: &yes}, &tool.Annotations{ReadOnly: true, OpenWorld: true}},
		{"additive write", &sdk.ToolAnnotations{DestructiveHint: &no, IdempotentHint: true, OpenWorldHint: &no}, &tool.Annotations{Idempotent: true}},
		{"destructive", &sdk.ToolAnnotations{DestructiveHint: &yes, OpenWorldHint: &yes}, &tool.Annotations{Destructive: true, OpenWorld: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, annotations(tt.in)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestExpand(t *testing.T) {
	env := map[string]string{"TOKEN": "s3cret", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		name, in, want, err string
	}{
		{"no template", "plain", "plain", ""},
		{"one var", "Bearer ${TOKEN}", "Bearer s3cret", ""},
		{"empty var", "[${EMPTY}]", "[]", ""},
		{"dollar escape", "$$HOME ${TOKEN}", "$HOME s3cret", ""},
		{"bare dollar kept", "cost $5", "cost $5", ""},
		{"default", "${NOPE:-dflt} ${TOKEN:-x}", "dflt s3cret", ""},
		{"unset", "${NOPE}", "", "${NOPE} is not set; export it or change the config"},
		{"unclosed", "${TOKEN", "", "unclosed ${ in template; write $$ for a literal $"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Expand(tt.in, lookup)
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("Expand(%q) error = %v, want %q", tt.in, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("Expand(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{"", "plain", "${A}", "$${A}", "${", "a$", "${A}${B}x", "$$$"} {
		f.Add(s)
	}
	lookup := func(k string) (string, bool) { return "<" + k + ">", k != "" && k[0] != 'Z' }
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Expand(s, lookup)
		if err != nil {
			return
		}
		if !strings.Contains(s, "$") && got != s {
			t.Fatalf("Expand(%q) = %q; text without $ must come back unchanged", s, got)
		}
	})
}

func FuzzToolName(f *testing.F) {
	for _, s := range []string{"echo", "get-sum", "a.b", "", "ü", strings.Repeat("x", 100)} {
		f.Add("srv", s)
	}
	f.Fuzz(func(t *testing.T, server, name string) {
		if sanitize(server) == "" {
			return
		}
		seen := map[string]bool{}
		for range 3 {
			n := toolName(server, name, func(s string) bool { return seen[s] })
			if !tool.ValidName(n) || seen[n] {
				t.Fatalf("toolName(%q, %q) = %q: invalid or repeated", server, name, n)
			}
			seen[n] = true
		}
	})
}
