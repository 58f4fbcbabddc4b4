package skill_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/skill"
)

// tree writes files (path → content) under a new temporary directory.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, c := range files {
		p = filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func skillMD(name, desc, extra, body string) string {
	s := "---\n"
	if name != "" {
		s += "name: " + name + "\n"
	}
	if desc != "" {
		s += "description: " + desc + "\n"
	}
	return s + extra + "---\n" + body + "\n"
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, dir, data string
		want            skill.Skill
		err             string
	}{
		{"full", "pdf", skillMD("pdf", "Fills PDF forms.", "allowed-tools: Bash(python3 scripts/fill.py:*), Read Grep\nlicense: MIT\n", "Body."),
			skill.Skill{Name: "pdf", Description: "Fills PDF forms.", AllowedTools: []string{"Bash(python3 scripts/fill.py:*)", "Read", "Grep"}, ModelInvocable: true, License: "MIT", Dir: "pdf"}, ""},
		{"list of tools", "x", skillMD("x", "X.", "allowed-tools:\n  - Read\n  - Bash(git status:*)\n", ""),
			skill.Skill{Name: "x", Description: "X.", AllowedTools: []string{"Read", "Bash(git status:*)"}, ModelInvocable: true, Dir: "x"}, ""},
		{"name from the folder", "deploy", skillMD("", "Deploys.", "disable-model-invocation: true\n", ""),
			skill.Skill{Name: "deploy", Description: "Deploys.", Dir: "deploy"}, ""},
		{"folded description", "y", "---\nname: y\ndescription: >\n  Two\n  lines.\n---\n",
			skill.Skill{Name: "y", Description: "Two lines.", ModelInvocable: true, Dir: "y"}, ""},
		{"no front matter", "z", "# Z\n", skill.Skill{}, "no front matter"},
		{"unclosed", "z", "---\nname: z\n", skill.Skill{}, "not closed"},
		{"no description", "z", skillMD("z", "", "", ""), skill.Skill{}, "no description"},
		{"bad name", "z", skillMD("Bad_Name", "d", "", ""), skill.Skill{}, "lowercase letters"},
		{"bad yaml", "z", "---\nname: [\n---\n", skill.Skill{}, "front matter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := skill.Parse(tt.dir, []byte(tt.data))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDiscoveryPriority: the workspace's .rein folder wins over its
// .claude folder, which wins over the user's folders, which win over
// plugins; shadowed and broken skills are listed as skipped with why.
func TestDiscoveryPriority(t *testing.T) {
	root := tree(t, map[string]string{
		"ws/.rein/skills/review/SKILL.md":           skillMD("review", "rein's review.", "", ""),
		"ws/.claude/skills/review/SKILL.md":         skillMD("review", "claude's review.", "", ""),
		"ws/.claude/skills/lint/SKILL.md":           skillMD("lint", "project lint.", "", ""),
		"ws/.claude/skills/broken/SKILL.md":         "no front matter",
		"ws/.claude/skills/empty/README.md":         "not a skill",
		"cfg/skills/lint/SKILL.md":                  skillMD("lint", "user lint.", "", ""),
		"cfg/skills/notes/SKILL.md":                 skillMD("notes", "user notes.", "", ""),
		"home/.claude/skills/notes/SKILL.md":        skillMD("notes", "home notes.", "", ""),
		"home/.claude/skills/tidy/SKILL.md":         skillMD("tidy", "home tidy.", "", ""),
		"ws/.rein/plugins/kit/skills/tidy/SKILL.md": skillMD("tidy", "plugin tidy.", "", ""),
		"ws/.rein/plugins/kit/skills/pack/SKILL.md": skillMD("pack", "plugin pack.", "", ""),
	})
	lib := skill.Discover(skill.Roots(&skill.RootsRequest{
		Workspace: filepath.Join(root, "ws"), UserConfig: filepath.Join(root, "cfg"), Home: filepath.Join(root, "home"),
		Plugins: []string{filepath.Join(root, "ws/.rein/plugins/kit")},
	}))
	var got []string
	for _, s := range lib.Skills() {
		got = append(got, s.Name+"="+s.Description+" ("+s.Source+")")
	}
	want := []string{
		"lint=project lint. (workspace:.claude)",
		"notes=user notes. (user)",
		"pack=plugin pack. (plugin:kit)",
		"review=rein's review. (workspace:.rein)",
		"tidy=home tidy. (user:.claude)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("skills (-want +got):\n%s", diff)
	}
	reasons := map[string]string{}
	for _, s := range lib.Skipped() {
		rel, _ := filepath.Rel(root, s.Path)
		reasons[filepath.ToSlash(rel)] = s.Reason
	}
	for p, want := range map[string]string{
		"ws/.claude/skills/review/SKILL.md":         "shadowed by " + filepath.Join(root, "ws/.rein/skills/review/SKILL.md"),
		"ws/.claude/skills/broken/SKILL.md":         "no front matter",
		"ws/.claude/skills/empty":                   "no SKILL.md",
		"cfg/skills/lint/SKILL.md":                  "shadowed by",
		"home/.claude/skills/notes/SKILL.md":        "shadowed by",
		"ws/.rein/plugins/kit/skills/tidy/SKILL.md": "shadowed by",
	} {
		if !strings.Contains(reasons[p], want) {
			t.Errorf("skipped %s: reason %q, want it to say %q", p, reasons[p], want)
		}
	}
	if s, ok := lib.Lookup("pack"); !ok || s.Path() != filepath.Join(root, "ws/.rein/plugins/kit/skills/pack/SKILL.md") {
		t.Errorf("Lookup(pack) = %+v, %v", s, ok)
	}
}

// TestCatalogIsStable: the catalog lists model-invocable skills by name
// whatever order the folders are met in, the same bytes after
// activations and deactivations and in a second discovery of the same
// folders; it never holds a body.
func TestCatalogIsStable(t *testing.T) {
	dir := tree(t, map[string]string{
		".claude/skills/zeta/SKILL.md":  skillMD("zeta", "Last.", "", "ZETA BODY"),
		".claude/skills/alpha/SKILL.md": skillMD("alpha", "First.", "", "ALPHA BODY"),
		".rein/skills/hidden/SKILL.md":  skillMD("hidden", "Host only.", "disable-model-invocation: true\n", "HIDDEN"),
	})
	roots := skill.Roots(&skill.RootsRequest{Workspace: dir})
	lib := skill.Discover(roots)
	cat := lib.Catalog()
	if !strings.Contains(cat, "- alpha: First.\n- zeta: Last.\n") || strings.Contains(cat, "hidden") || strings.Contains(cat, "BODY") {
		t.Fatalf("catalog:\n%s", cat)
	}
	act := skill.NewActivator(lib, nil)
	for i := range 100 {
		if i%10 == 0 {
			if _, err := act.Activate("s", "alpha", skill.ViaTool); err != nil {
				t.Fatal(err)
			}
		}
		if i%10 == 5 {
			if err := act.Deactivate("s", "alpha", skill.ViaTool); err != nil {
				t.Fatal(err)
			}
		}
		if got := lib.Catalog(); got != cat {
			t.Fatalf("step %d: catalog changed:\n%s", i, got)
		}
	}
	if again := skill.Discover(roots).Catalog(); again != cat {
		t.Errorf("a second discovery gave another catalog:\n%s", again)
	}
	if empty := skill.Discover(nil).Catalog(); empty != "" {
		t.Errorf("no skills: catalog %q, want empty", empty)
	}
}

func activationTree(t *testing.T) (*skill.Library, string) {
	dir := tree(t, map[string]string{
		".claude/skills/pdf/SKILL.md":            skillMD("pdf", "Fills PDF forms.", "", "Read reference.md, then run scripts/fill.py."),
		".claude/skills/pdf/reference.md":        "FIELD NAMES: a, b, c",
		".claude/skills/pdf/scripts/fill.py":     "print('filled')",
		".claude/skills/pdf/.git/config":         "hidden",
		".claude/skills/notes/SKILL.md":          skillMD("notes", "Notes.", "", "NOTES BODY"),
		".claude/skills/deploy/SKILL.md":         skillMD("deploy", "Deploys.", "disable-model-invocation: true\n", "DEPLOY"),
		".claude/skills/secret-outside/x.txt":    "",
		".claude/skills/secret-outside/SKILL.md": skillMD("secret-outside", "S.", "", "S"),
		"outside.txt":                            "OUTSIDE",
	})
	return skill.Discover(skill.Roots(&skill.RootsRequest{Workspace: dir})), dir
}

// TestActivation: activating loads the body and lists the folder's files
// without reading them; a file is read only on request, only of an
// active skill and only inside its folder; the cap holds; every change
// is recorded once.
func TestActivation(t *testing.T) {
	lib, _ := activationTree(t)
	act := skill.NewActivator(lib, &skill.ActivatorOptions{MaxActive: 2})
	if _, err := act.ReadFile("s", "pdf", "reference.md"); err == nil || !strings.Contains(err.Error(), "not active") {
		t.Errorf("reading a file of an inactive skill: %v", err)
	}
	ac, err := act.Activate("s", "pdf", skill.ViaTool)
	if err != nil {
		t.Fatal(err)
	}
	text := ac.Text()
	if !strings.Contains(text, "Read reference.md, then run scripts/fill.py.") || strings.Contains(text, "FIELD NAMES") {
		t.Errorf("activation text:\n%s", text)
	}
	if diff := cmp.Diff([]string{"reference.md", "scripts/fill.py"}, ac.Files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	if got, err := act.ReadFile("s", "pdf", "reference.md"); err != nil || got != "FIELD NAMES: a, b, c" {
		t.Errorf("ReadFile = %q, %v", got, err)
	}
	for _, bad := range []string{"../notes/SKILL.md", "../../../outside.txt", "/etc/passwd"} {
		if _, err := act.ReadFile("s", "pdf", bad); err == nil {
			t.Errorf("ReadFile(%q) left the skill's folder", bad)
		}
	}
	if _, err := act.ReadFile("other-session", "pdf", "reference.md"); err == nil {
		t.Error("a skill active in one session was readable in another")
	}
	if ac, err := act.Activate("s", "pdf", skill.ViaTool); err != nil || !ac.Again {
		t.Errorf("second activation: %+v, %v", ac, err)
	}
	if _, err := act.Activate("s", "deploy", skill.ViaTool); err == nil || !strings.Contains(err.Error(), "user only") {
		t.Errorf("model activation of a host-only skill: %v", err)
	}
	if _, err := act.Activate("s", "deploy", skill.ViaHost); err != nil {
		t.Errorf("host activation of a host-only skill: %v", err)
	}
	if _, err := act.Activate("s", "notes", skill.ViaTool); err == nil || !strings.Contains(err.Error(), "deactivate one first") {
		t.Errorf("over the cap: %v", err)
	}
	if err := act.Deactivate("s", "pdf", skill.ViaTool); err != nil {
		t.Fatal(err)
	}
	if err := act.Deactivate("s", "pdf", skill.ViaTool); err == nil {
		t.Error("deactivating an inactive skill succeeded")
	}
	if _, err := act.Activate("s", "notes", skill.ViaTool); err != nil {
		t.Errorf("after a deactivation: %v", err)
	}
	if _, err := act.Activate("s", "nope", skill.ViaTool); err == nil || !strings.Contains(err.Error(), "the skills are: deploy, notes, pdf") {
		t.Errorf("unknown skill: %v", err)
	}
	var got []string
	for _, p := range act.Records("s") {
		m := p.(*session.SessionMeta)
		var v struct{ Name, Via string }
		if err := json.Unmarshal([]byte(m.Value), &v); err != nil {
			t.Fatal(err)
		}
		got = append(got, m.Key+" "+v.Name+" "+v.Via)
	}
	want := []string{"skill.activate pdf tool", "skill.activate deploy host", "skill.deactivate pdf tool", "skill.activate notes tool"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("records (-want +got):\n%s", diff)
	}
	if again := act.Records("s"); len(again) != 0 {
		t.Errorf("records were given twice: %v", again)
	}
	var names []string
	for _, s := range act.Active("s") {
		names = append(names, s.Name)
	}
	if diff := cmp.Diff([]string{"deploy", "notes"}, names); diff != "" {
		t.Errorf("active (-want +got):\n%s", diff)
	}
}
