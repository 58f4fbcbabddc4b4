package skill

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/reinhq/rein/session"
)

// DefaultMaxActive is how many skills may be active in one session at
// once when ActivatorOptions.MaxActive is zero.
const DefaultMaxActive = 8

// maxFiles caps the resource paths an activation lists.
const maxFiles = 200

// How a skill was activated or deactivated, on its records.
const (
	ViaTool = "tool" // the model called the skill tool
	ViaHost = "host" // the host (a person's /name prompt, an API call)
)

// Record keys of the session.meta events activations write.
const (
	KeyActivate   = "skill.activate"
	KeyDeactivate = "skill.deactivate"
)

// ErrUnknown is returned for a skill name the library does not hold.
var ErrUnknown = errors.New("skill: no skill of that name")

// ActivatorOptions configures NewActivator. A nil *ActivatorOptions is
// the zero value.
type ActivatorOptions struct {
	// MaxActive caps the skills active at once in one session; zero means
	// DefaultMaxActive. Activating one more is refused until one is
	// deactivated.
	MaxActive int
}

// Activator activates and deactivates a library's skills, per session,
// and keeps the records of each change for the session log. It is safe
// for concurrent use.
type Activator struct {
	lib *Library
	max int

	mu      sync.Mutex
	active  map[string][]string          // session → active names, in activation order
	pending map[string][]session.Payload // session → records not yet taken
}

// NewActivator returns an Activator over lib.
func NewActivator(lib *Library, opts *ActivatorOptions) *Activator {
	a := &Activator{lib: lib, max: DefaultMaxActive, active: map[string][]string{}, pending: map[string][]session.Payload{}}
	if opts != nil && opts.MaxActive > 0 {
		a.max = opts.MaxActive
	}
	return a
}

// Library returns the skills the Activator activates.
func (a *Activator) Library() *Library { return a.lib }

// Activation is what activating a skill gives: its instructions and the
// paths of the files beside them, which are not read until asked for.
type Activation struct {
	Skill *Skill
	Body  string
	// Files are the skill folder's other files, relative to Skill.Dir,
	// sorted; at most 200.
	Files []string
	// Again is set when the skill was already active: nothing new is
	// recorded.
	Again bool
}

// Text renders the activation for the model.
func (ac *Activation) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "<skill name=%q dir=%q>\n%s\n", ac.Skill.Name, ac.Skill.Dir, ac.Body)
	if len(ac.Files) > 0 {
		b.WriteString("\nFiles in the skill's folder (load one with the " + ToolName + " tool's path, or run a script from the folder):\n")
		for _, f := range ac.Files {
			b.WriteString("- " + f + "\n")
		}
	}
	b.WriteString("</skill>")
	return b.String()
}

// Activate activates the skill name in sess and returns its body. via is
// ViaTool or ViaHost; a skill whose front matter disables model
// invocation is refused through the tool. Over the cap it fails with an
// error that says to deactivate one first.
func (a *Activator) Activate(sess, name, via string) (*Activation, error) {
	s, ok := a.lib.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("%w %q; the skills are: %s", ErrUnknown, name, a.names())
	}
	if via == ViaTool && !s.ModelInvocable {
		return nil, fmt.Errorf("skill: %s is started by the user only (disable-model-invocation)", name)
	}
	body, err := s.Body()
	if err != nil {
		return nil, err
	}
	ac := &Activation{Skill: s, Body: body, Files: files(s.Dir)}
	a.mu.Lock()
	defer a.mu.Unlock()
	act := a.active[sess]
	if slices.Contains(act, name) {
		ac.Again = true
		return ac, nil
	}
	if len(act) >= a.max {
		return nil, fmt.Errorf("skill: %d skills are active, the most at once (%s); deactivate one first", len(act), strings.Join(act, ", "))
	}
	a.active[sess] = append(act, name)
	a.pending[sess] = append(a.pending[sess], record(KeyActivate, s, via))
	return ac, nil
}

// Deactivate ends the skill name in sess; reason says why (ViaTool,
// ViaHost or the host's own word). Deactivating a skill that is not
// active is an error.
func (a *Activator) Deactivate(sess, name, reason string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	act := a.active[sess]
	i := slices.Index(act, name)
	if i < 0 {
		return fmt.Errorf("skill: %s is not active; the active skills are: %s", name, orNone(act))
	}
	a.active[sess] = slices.Delete(slices.Clone(act), i, i+1)
	s, _ := a.lib.Lookup(name)
	a.pending[sess] = append(a.pending[sess], record(KeyDeactivate, s, reason))
	return nil
}

// Active returns the skills active in sess, in activation order.
func (a *Activator) Active(sess string) []*Skill {
	a.mu.Lock()
	names := slices.Clone(a.active[sess])
	a.mu.Unlock()
	out := make([]*Skill, 0, len(names))
	for _, n := range names {
		if s, ok := a.lib.Lookup(n); ok {
			out = append(out, s)
		}
	}
	return out
}

// Records returns, and forgets, the records of the activations and
// deactivations in sess since the last call: session.meta events keyed
// KeyActivate or KeyDeactivate whose value is a JSON object with the
// skill's name, source and how (via). A host passes them to the log
// (agent.Options.Records), where observers see them.
func (a *Activator) Records(sess string) []session.Payload {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.pending[sess]
	delete(a.pending, sess)
	return out
}

// ReadFile returns a file of the active skill name's folder; rel is
// relative to it and may not leave it. A skill must be active for its
// files to be read.
func (a *Activator) ReadFile(sess, name, rel string) (string, error) {
	a.mu.Lock()
	active := slices.Contains(a.active[sess], name)
	a.mu.Unlock()
	s, ok := a.lib.Lookup(name)
	if !ok {
		return "", fmt.Errorf("%w %q; the skills are: %s", ErrUnknown, name, a.names())
	}
	if !active {
		return "", fmt.Errorf("skill: %s is not active; activate it before reading its files", name)
	}
	if filepath.IsAbs(rel) || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("skill: %q is outside the skill's folder; give a path relative to it, such as one the activation listed", rel)
	}
	root, err := os.OpenRoot(s.Dir)
	if err != nil {
		return "", fmt.Errorf("skill: %s: %w", name, err)
	}
	defer root.Close()
	data, err := root.ReadFile(rel)
	if err != nil {
		return "", fmt.Errorf("skill: %s: %w", name, err)
	}
	return string(data), nil
}

func (a *Activator) names() string {
	var ns []string
	for _, s := range a.lib.skills {
		ns = append(ns, s.Name)
	}
	return orNone(ns)
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "(none)"
	}
	return strings.Join(names, ", ")
}

func record(key string, s *Skill, via string) *session.SessionMeta {
	v, _ := json.Marshal(struct {
		Name   string `json:"name"`
		Source string `json:"source,omitempty"`
		Via    string `json:"via"`
	}{s.Name, s.Source, via})
	return &session.SessionMeta{Key: key, Value: string(v)}
}

// files lists the folder's files other than SKILL.md, without reading
// them.
func files(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // an unreadable entry is left out
		}
		if len(out) >= maxFiles {
			return filepath.SkipAll
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if rel, err := filepath.Rel(dir, p); err == nil && rel != FileName {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}
