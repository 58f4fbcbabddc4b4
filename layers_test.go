package rein_test

import (
	"encoding/json"
	"io"
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
	// JSON strings written and read as encoding/json does, for the direct
	// encoders and decoders of the stores and the adapters: a leaf below
	// every layer.
	"internal/jsonesc": {},
	// The process's CPU time, for the benchmarks that report it (the
	// session suite's among them): a leaf too.
	"internal/cputime": {},
	"provider":         {"llm", "provider/internal", "internal/jsonesc"},
	"session":          {"llm", "session", "internal/jsonesc", "internal/cputime"},
	"tool":             {"llm", "tool"},
	"hook":             {"llm", "tool", "session", "hook"},
	"mcp":              {"llm", "tool", "session", "hook", "mcp"},
	"skill":            {"llm", "tool", "session", "hook", "skill"},
	"agent":            {"llm", "tool", "session", "hook", "skill", "agent"},
	"internal":         {"llm", "tool", "session", "hook", "internal"},
	"durable":          {"llm", "tool", "session", "hook", "agent", "durable"},
	"serve":            {"llm", "tool", "session", "hook", "agent", "serve"},
	"telemetry":        {"llm", "tool", "session", "hook", "agent", "telemetry"},
	"acp":              {"llm", "tool", "session", "hook", "mcp", "agent", "acp"},
	"cmd":              {""}, // the host may import anything
}

// testKit lists what every package's tests may import besides their own
// layer and the package under test: the fakes and suites, and the internal
// test-only packages.
var testKit = []string{"llm/llmtest", "session/sessiontest", "tool/tooltest", "internal/golden", "internal/testwait", "internal/cputime"}

// testLayers lists, for a package prefix, what its tests may import on top
// of testKit: the end-to-end tests that run a package under the layer above
// it. The longest matching prefix applies.
var testLayers = map[string][]string{
	"agent":        {"provider"}, // the loop against real adapters' wire shapes
	"hook/command": {"agent"},    // command hooks driven by the loop
	"mcp":          {"agent"},    // MCP tools called by the loop
	"telemetry":    {"mcp"},      // the span tree of a run that calls an MCP server
	// the full-stack benchmark: the loop over a real adapter and stores
	"internal/benchfull": {"agent", "provider"},
}

// stdlibOnly lists packages that may import nothing outside the standard
// library; their tests may import testOnlyThirdParty too.
var stdlibOnly = []string{"llm"}

var testOnlyThirdParty = []string{"github.com/google/go-cmp"}

// listed is what `go list -json` says of a package's imports.
type listed struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

func TestImportDirection(t *testing.T) {
	for _, p := range listPackages(t) {
		pkg := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, module), "/")
		if pkg == "" {
			continue
		}
		allowed, ok := rule(layers, pkg)
		if !ok {
			t.Errorf("package %s has no layer rule; add it to layers", pkg)
			continue
		}
		checkImports(t, pkg, "", p.Imports, allowed, nil)
		extra, _ := rule(testLayers, pkg)
		testAllowed := append(append(append([]string{pkg}, allowed...), testKit...), extra...)
		checkImports(t, pkg, "a test of ", append(p.TestImports, p.XTestImports...), testAllowed, testOnlyThirdParty)
	}
}

// checkImports checks the imports of pkg (or of its tests, as who says)
// against the module packages allowed and, for a standard-library-only
// package, the third-party modules thirdParty.
func checkImports(t *testing.T, pkg, who string, imports, allowed, thirdParty []string) {
	t.Helper()
	for _, imp := range imports {
		if strings.HasPrefix(imp, module+"/cmd") {
			t.Errorf("%s%s imports %s: nothing imports cmd", who, pkg, imp)
		}
		thirdPartyImport := strings.Contains(strings.Split(imp, "/")[0], ".") && !strings.HasPrefix(imp, module)
		if thirdPartyImport && inside(pkg, stdlibOnly) && !inside(imp, thirdParty) {
			t.Errorf("%s%s imports %s: it may use only the standard library", who, pkg, imp)
		}
		if !strings.HasPrefix(imp, module+"/") {
			continue
		}
		if dep := strings.TrimPrefix(imp, module+"/"); !inside(dep, allowed) {
			t.Errorf("%s%s imports %s, which is not below it (allowed: %v)", who, pkg, dep, allowed)
		}
	}
}

func listPackages(t *testing.T) []listed {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []listed
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			return pkgs
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
}

func rule(rules map[string][]string, pkg string) ([]string, bool) {
	best, found := "", false
	for prefix := range rules {
		if (pkg == prefix || strings.HasPrefix(pkg, prefix+"/")) && len(prefix) >= len(best) {
			best, found = prefix, true
		}
	}
	return rules[best], found
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
