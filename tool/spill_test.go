package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/llm"
)

func TestB17_Spill(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	for i := range 200 {
		lines = append(lines, fmt.Sprintf("line %03d", i))
	}
	full := strings.Join(lines, "\n")
	res := Text(full)
	res.Parts = append(res.Parts, &llm.Image{MediaType: "image/png", Data: []byte{1}})
	res.Meta = map[string]any{"k": "v"}

	out, err := Spill(res, 300, dir)
	if err != nil {
		t.Fatal(err)
	}
	path, _ := out.Meta[MetaSpillPath].(string)
	if path == "" || !strings.HasPrefix(path, dir) {
		t.Fatalf("spill path %q not in %s", path, dir)
	}
	saved, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(saved) != full {
		t.Error("the spill file does not hold the full output")
	}
	text := out.Parts[0].(*llm.Text).Text
	m := regexp.MustCompile(`(?s)^(.*)\n\[… (\d+) bytes elided; full output in (.+)\]$`).FindStringSubmatch(text)
	if m == nil {
		t.Fatalf("no head and marker in %q", text)
	}
	head := m[1]
	if !strings.HasPrefix(full, head) || len(head) == 0 || full[len(head)] != '\n' {
		t.Errorf("head %q is not a whole-line prefix of the output", head)
	}
	if m[2] != fmt.Sprint(len(full)-len(head)) || m[3] != path {
		t.Errorf("marker says %s bytes in %s; want %d in %s", m[2], m[3], len(full)-len(head), path)
	}
	if len(text) > 300 {
		t.Errorf("the model gets %d bytes, over the 300 budget", len(text))
	}
	if _, ok := out.Parts[1].(*llm.Image); !ok || len(out.Parts) != 2 {
		t.Errorf("non-text parts not kept: %v", out.Parts)
	}
	if out.Meta["k"] != "v" || res.Meta[MetaSpillPath] != nil {
		t.Error("Meta not copied, or the input result was modified")
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Errorf("spill file mode %v, want 0600", info.Mode().Perm())
	}
}

func TestSpillWithinBudget(t *testing.T) {
	res := Text("short")
	for _, budget := range []int{0, -1, 5, 100} {
		out, err := Spill(res, budget, t.TempDir())
		if err != nil || out != res {
			t.Errorf("Spill(budget %d) = %v, %v; want the result itself", budget, out, err)
		}
	}
}

func TestSpillKeepsUTF8AndErrorFlag(t *testing.T) {
	res := Errorf("%s", strings.Repeat("é", 500))
	out, err := Spill(res, 200, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if !out.IsError {
		t.Error("error flag lost")
	}
	if text := out.TextOf(); !json.Valid([]byte(fmt.Sprintf("%q", text))) || strings.ContainsRune(text, '\uFFFD') {
		t.Errorf("head cut inside a character: %q", text)
	}
}

func TestSpillUnwritableDir(t *testing.T) {
	file := t.TempDir() + "/file"
	os.WriteFile(file, nil, 0o600)
	if _, err := Spill(Text(strings.Repeat("x", 100)), 10, file+"/sub"); err == nil {
		t.Error("spill into a path under a file succeeded")
	}
}

func TestB58_DryRun(t *testing.T) {
	ran := map[string]bool{}
	mk := func(name string, ann *Annotations) Tool {
		return &Func{ToolSpec: Spec{Name: name, Annotations: ann}, Fn: func(ctx context.Context, call *Call) (*Result, error) {
			ran[name] = true
			return Text(name + " ran"), nil
		}}
	}
	tests := []struct {
		name      string
		tool      Tool
		want      string
		wantError bool
		wantRan   bool
	}{
		{"read-only runs", mk("read", &Annotations{ReadOnly: true}), "read ran", false, true},
		{"destructive stubbed", mk("delete", &Annotations{Destructive: true}), `Dry run: delete was not run. It would have been called with {"path":"a"} and could change or delete things; nothing was changed.`, false, false},
		{"writing stubbed", mk("write", &Annotations{}), `Dry run: write was not run. It would have been called with {"path":"a"} and could change things; nothing was changed.`, false, false},
		{"unannotated unavailable", mk("mystery", nil), "Tool mystery is unavailable in dry-run mode: it is not annotated as read-only, so running it could change something.", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := DryRun(tt.tool)
			if diff := cmp.Diff(tt.tool.Spec(), d.Spec()); diff != "" {
				t.Errorf("spec changed (-want +got):\n%s", diff)
			}
			res, err := Run(context.Background(), d, &Call{Args: json.RawMessage(`{"path":"a"}`)})
			if err != nil {
				t.Fatal(err)
			}
			if res.TextOf() != tt.want || res.IsError != tt.wantError {
				t.Errorf("result %q (error %v), want %q (error %v)", res.TextOf(), res.IsError, tt.want, tt.wantError)
			}
			if ran[tt.tool.Spec().Name] != tt.wantRan {
				t.Errorf("ran = %v, want %v", ran[tt.tool.Spec().Name], tt.wantRan)
			}
			if !tt.wantRan && res.Meta[MetaDryRun] != true {
				t.Error("made-up result not marked as a dry run")
			}
		})
	}
}

func TestDryRunStubShortensLongArguments(t *testing.T) {
	w := DryRun(&Func{ToolSpec: Spec{Name: "write", Annotations: &Annotations{}}})
	args := `{"content":"` + strings.Repeat("x", 5000) + `"}`
	res, _ := w.Call(context.Background(), &Call{Args: json.RawMessage(args)})
	if text := res.TextOf(); len(text) > 2300 || !strings.Contains(text, "(5014 bytes in all)") {
		t.Errorf("stub of %d bytes: %.120q…", len(text), text)
	}
}

func TestDryRunSet(t *testing.T) {
	s, _ := NewSet(fake("a", nil), fake("b", &Annotations{ReadOnly: true}))
	s.Alias("bee", "b")
	d := DryRunSet(s)
	if diff := cmp.Diff(names(s.Specs()), names(d.Specs())); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	tl, ok := d.Lookup("bee")
	if !ok {
		t.Fatal("alias lost")
	}
	res, _ := Run(context.Background(), tl, &Call{})
	if res.TextOf() != "b ran with " {
		t.Errorf("read-only tool through the dry-run set: %q", res.TextOf())
	}
	a, _ := d.Lookup("a")
	if res, _ := Run(context.Background(), a, &Call{}); !res.IsError {
		t.Errorf("unannotated tool ran in a dry-run set: %q", res.TextOf())
	}
	if a, _ := s.Lookup("a"); a.Spec().Name != "a" {
		t.Error("original set changed")
	} else if res, _ := Run(context.Background(), a, &Call{}); res.IsError {
		t.Error("original set's tool wrapped too")
	}
}
