package rein_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/reinhq/rein"

// layers lists, for each package prefix inside the module, which module
// packages it may import directly. Imports point down only. The longest
// matching prefix applies.
var layers = map[string][]string{
	"llm":         {},
	"llm/llmtest": {"llm"},
	"provider":    {"llm"},
	"session":     {"llm", "session"},
	"tool":        {"llm", "tool"},
	"hook":        {"llm", "tool", "session", "hook"},
	"mcp":         {"llm", "tool", "session", "hook", "mcp"},
	"agent":       {"llm", "tool", "session", "hook", "agent"},
	"internal":    {"llm", "tool", "session", "hook", "internal"},
	"serve":       {"llm", "tool", "session", "hook", "agent", "serve"},
	"cmd":         {""}, // the host may import anything
}

// stdlibOnly lists packages that may import nothing outside the standard library.
var stdlibOnly = []string{"llm"}

func TestImportDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		pkg := strings.TrimPrefix(strings.TrimPrefix(fields[0], module), "/")
		if pkg == "" {
			continue
		}
		allowed, ok := rule(pkg)
		if !ok {
			t.Errorf("package %s has no layer rule; add it to layers", pkg)
			continue
		}
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, module+"/cmd") {
				t.Errorf("%s imports %s: nothing imports cmd", pkg, imp)
			}
			if inside(pkg, stdlibOnly) && strings.Contains(strings.Split(imp, "/")[0], ".") && !strings.HasPrefix(imp, module) {
				t.Errorf("%s imports %s: it may use only the standard library", pkg, imp)
			}
			if !strings.HasPrefix(imp, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(imp, module+"/")
			if !inside(dep, allowed) {
				t.Errorf("%s imports %s, which is not below it (allowed: %v)", pkg, dep, allowed)
			}
		}
	}
}

func rule(pkg string) ([]string, bool) {
	best, found := "", false
	for prefix := range layers {
		if (pkg == prefix || strings.HasPrefix(pkg, prefix+"/")) && len(prefix) >= len(best) {
			best, found = prefix, true
		}
	}
	return layers[best], found
}

// inside reports whether pkg is one of prefixes or below one; "" matches all.
func inside(pkg string, prefixes []string) bool {
	for _, p := range prefixes {
		if p == "" || pkg == p || strings.HasPrefix(pkg, p+"/") {
			return true
		}
	}
	return false
}
