package skill

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// FileName is the file that makes a folder a skill.
const FileName = "SKILL.md"

// Limits of the Agent Skills format.
const (
	MaxNameLen        = 64
	MaxDescriptionLen = 1024
)

// Skill is one skill: a folder holding a SKILL.md whose front matter
// names and describes it and whose body is its instructions.
type Skill struct {
	// Name is the front matter's name, or the folder's when it has none.
	Name string
	// Description says what the skill does and when to use it; it is all
	// the model sees of a skill until the skill is activated.
	Description string
	// AllowedTools are the tools the skill may use without asking while it
	// is active, as rules in the settings format ("Bash(git:*)", "Read").
	AllowedTools []string
	// ModelInvocable is false when the front matter says
	// disable-model-invocation: the skill is left out of the catalog and
	// only a host activates it.
	ModelInvocable bool
	// License and Metadata are kept as the front matter gives them.
	License  string
	Metadata map[string]string
	// Dir is the skill's folder and Source the root it was found under
	// (see Root.Source).
	Dir    string
	Source string
}

// Path is the skill's SKILL.md.
func (s *Skill) Path() string { return filepath.Join(s.Dir, FileName) }

// Body reads the skill's instructions: SKILL.md after its front matter.
// It is read when asked for, never at discovery.
func (s *Skill) Body() (string, error) {
	data, err := os.ReadFile(s.Path())
	if err != nil {
		return "", fmt.Errorf("skill: %s: %w", s.Name, err)
	}
	_, body, err := SplitFrontMatter(data)
	if err != nil {
		return "", fmt.Errorf("skill: %s: %w", s.Path(), err)
	}
	return strings.TrimSpace(string(body)), nil
}

type frontMatter struct {
	Name                   string            `yaml:"name"`
	Description            string            `yaml:"description"`
	AllowedTools           yaml.Node         `yaml:"allowed-tools"`
	DisableModelInvocation bool              `yaml:"disable-model-invocation"`
	License                string            `yaml:"license"`
	Metadata               map[string]string `yaml:"metadata"`
}

// validName is the format's name rule: lowercase letters, digits and
// hyphens, not starting or ending with a hyphen nor doubling one.
var validName = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// SplitFrontMatter splits a Markdown file into its YAML front matter (the
// lines between a first line of --- and the next) and the body after it.
func SplitFrontMatter(data []byte) (head, body []byte, err error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	rest, ok := bytes.CutPrefix(data, []byte("---"))
	if !ok {
		return nil, nil, errors.New("no front matter; start the file with a line of --- then name: and description:")
	}
	head, body, ok = bytes.Cut(rest, []byte("\n---"))
	if !ok {
		return nil, nil, errors.New("the front matter is not closed; end it with a line of ---")
	}
	if _, after, ok := bytes.Cut(body, []byte("\n")); ok {
		return head, after, nil
	}
	return head, nil, nil
}

// Parse reads a skill from the SKILL.md data of folder dir. The error
// says what to fix.
func Parse(dir string, data []byte) (Skill, error) {
	s := Skill{Dir: dir, ModelInvocable: true}
	head, _, err := SplitFrontMatter(data)
	if err != nil {
		return s, err
	}
	var fm frontMatter
	if err := yaml.Unmarshal(head, &fm); err != nil {
		return s, fmt.Errorf("front matter: %w", err)
	}
	s.Name = strings.TrimSpace(fm.Name)
	if s.Name == "" {
		s.Name = filepath.Base(dir)
	}
	if len(s.Name) > MaxNameLen || !validName.MatchString(s.Name) {
		return s, fmt.Errorf("name %q: use at most %d lowercase letters, digits and single hyphens", s.Name, MaxNameLen)
	}
	s.Description = strings.Join(strings.Fields(fm.Description), " ")
	if s.Description == "" {
		return s, errors.New("no description; say in a line what the skill does and when to use it, so the model knows when to load it")
	}
	if len(s.Description) > MaxDescriptionLen {
		return s, fmt.Errorf("description is %d bytes; keep it to %d", len(s.Description), MaxDescriptionLen)
	}
	if s.AllowedTools, err = toolList(&fm.AllowedTools); err != nil {
		return s, fmt.Errorf("allowed-tools: %w", err)
	}
	s.ModelInvocable = !fm.DisableModelInvocation
	s.License, s.Metadata = fm.License, fm.Metadata
	return s, nil
}

// toolList reads allowed-tools: a YAML list, or one string of names
// separated by commas or spaces (a space inside parentheses belongs to
// the rule, as in "Bash(git status:*)").
func toolList(n *yaml.Node) ([]string, error) {
	switch n.Kind {
	case 0:
		return nil, nil
	case yaml.SequenceNode:
		var raw []string
		if err := n.Decode(&raw); err != nil {
			return nil, err
		}
		var out []string
		for _, r := range raw {
			out = append(out, splitTools(r)...)
		}
		return out, nil
	case yaml.ScalarNode:
		return splitTools(n.Value), nil
	}
	return nil, errors.New("write the tools as a list or as names separated by commas")
}

func splitTools(s string) []string {
	var out []string
	depth, start := 0, 0
	flush := func(end int) {
		if t := strings.TrimSpace(s[start:end]); t != "" {
			out = append(out, t)
		}
		start = end + 1
	}
	for i, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case (r == ',' || r == ' ' || r == '\t') && depth == 0:
			flush(i)
		}
	}
	flush(len(s))
	return out
}
