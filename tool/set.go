package tool

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/reinhq/rein/llm"
)

// Set is an ordered collection of tools, the ones a model is offered. It is
// safe for concurrent use; reads take no lock. A nil *Set is an empty set.
type Set struct {
	mu   sync.Mutex // serialises writers
	view atomic.Pointer[setView]
}

// setView is an immutable snapshot; writers replace it whole.
type setView struct {
	tools     []Tool
	byName    map[string]int    // real name → index
	aliases   map[string]string // alias → real name
	advertise map[string]string // real name → alias listed in Specs
	specsOnce sync.Once
	specs     []llm.ToolSpec
	valMu     sync.Mutex
	vals      map[string]*Validator
}

// AliasOptions configures Set.AliasWith. A nil *AliasOptions is the zero
// value.
type AliasOptions struct {
	// Advertise lists the alias in Specs in place of the real name, so
	// the model sees the tool only under the alias.
	Advertise bool
}

// NewSet returns a set holding tools in order. Two tools with one name are
// an error.
func NewSet(tools ...Tool) (*Set, error) {
	s := &Set{}
	for _, t := range tools {
		if err := s.Add(t); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (s *Set) load() *setView {
	if s == nil {
		return nil
	}
	return s.view.Load()
}

func (v *setView) clone() *setView {
	n := &setView{
		byName:    make(map[string]int),
		aliases:   make(map[string]string),
		advertise: make(map[string]string),
	}
	if v == nil {
		return n
	}
	n.tools = append([]Tool(nil), v.tools...)
	for k, x := range v.byName {
		n.byName[k] = x
	}
	for k, x := range v.aliases {
		n.aliases[k] = x
	}
	for k, x := range v.advertise {
		n.advertise[k] = x
	}
	return n
}

func (v *setView) taken(name string) bool {
	if v == nil {
		return false
	}
	_, a := v.byName[name]
	_, b := v.aliases[name]
	return a || b
}

// Add appends t. Its name must be valid (see ValidName) and not already a
// tool's or an alias's name.
func (s *Set) Add(t Tool) error {
	if t == nil {
		return fmt.Errorf("tool: add: nil tool")
	}
	name := t.Spec().Name
	if !ValidName(name) {
		return fmt.Errorf("tool: add %q: %w", name, ErrInvalidName)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.view.Load()
	if old.taken(name) {
		return fmt.Errorf("tool: add %q: %w; rename one of the tools or alias it", name, ErrDuplicateName)
	}
	v := old.clone()
	v.byName[name] = len(v.tools)
	v.tools = append(v.tools, t)
	s.view.Store(v)
	return nil
}

// Alias makes alias another name for the tool called name. The alias
// exists only at the model boundary: Lookup resolves it, while Specs keeps
// listing the real name.
func (s *Set) Alias(alias, name string) error { return s.AliasWith(alias, name, nil) }

// AliasWith is Alias with options; with Advertise the model is offered the
// tool under the alias instead of its real name.
func (s *Set) AliasWith(alias, name string, opts *AliasOptions) error {
	if !ValidName(alias) {
		return fmt.Errorf("tool: alias %q: %w", alias, ErrInvalidName)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.view.Load()
	if old == nil || !old.taken(name) {
		return fmt.Errorf("tool: alias %q for %q: %w; add the tool first", alias, name, ErrNotFound)
	}
	if old.taken(alias) {
		return fmt.Errorf("tool: alias %q: %w", alias, ErrDuplicateName)
	}
	v := old.clone()
	if real, ok := v.aliases[name]; ok {
		name = real
	}
	v.aliases[alias] = name
	if opts != nil && opts.Advertise {
		v.advertise[name] = alias
	}
	s.view.Store(v)
	return nil
}

// Remove takes out the tool answering to name (a real name or an alias)
// along with its aliases. Removing an unknown name is ErrNotFound.
func (s *Set) Remove(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.view.Load()
	if old == nil || !old.taken(name) {
		return fmt.Errorf("tool: remove %q: %w", name, ErrNotFound)
	}
	v := old.clone()
	if real, ok := v.aliases[name]; ok {
		name = real
	}
	i := v.byName[name]
	v.tools = append(v.tools[:i], v.tools[i+1:]...)
	delete(v.byName, name)
	for k, x := range v.byName {
		if x > i {
			v.byName[k] = x - 1
		}
	}
	for a, real := range v.aliases {
		if real == name {
			delete(v.aliases, a)
		}
	}
	delete(v.advertise, name)
	s.view.Store(v)
	return nil
}

// Lookup returns the tool answering to name, a real name or an alias.
func (s *Set) Lookup(name string) (Tool, bool) {
	v := s.load()
	if v == nil {
		return nil, false
	}
	if real, ok := v.aliases[name]; ok {
		name = real
	}
	i, ok := v.byName[name]
	if !ok {
		return nil, false
	}
	return v.tools[i], true
}

// Canonical returns the real name of the tool answering to name.
func (s *Set) Canonical(name string) (string, bool) {
	v := s.load()
	if v == nil {
		return "", false
	}
	if real, ok := v.aliases[name]; ok {
		return real, true
	}
	_, ok := v.byName[name]
	return name, ok
}

// Tools returns the tools in order, in a new slice.
func (s *Set) Tools() []Tool {
	v := s.load()
	if v == nil {
		return nil
	}
	return append([]Tool(nil), v.tools...)
}

// Len returns the number of tools, aliases not counted.
func (s *Set) Len() int {
	v := s.load()
	if v == nil {
		return 0
	}
	return len(v.tools)
}

// Specs returns what the model is told about the tools, in order. It is
// computed once and shared until the set changes: callers must not modify
// the slice or its schemas.
func (s *Set) Specs() []llm.ToolSpec {
	v := s.load()
	if v == nil {
		return nil
	}
	v.specsOnce.Do(func() {
		v.specs = make([]llm.ToolSpec, len(v.tools))
		for i, t := range v.tools {
			sp := t.Spec()
			name := sp.Name
			if a, ok := v.advertise[name]; ok {
				name = a
			}
			v.specs[i] = llm.ToolSpec{Name: name, Description: sp.Description, Schema: sp.Schema}
		}
	})
	return v.specs
}

// Validator returns the compiled argument validator of the tool answering
// to name, compiling it at most once per tool. A tool that is Validated,
// itself or under its wrappers (found with As), gives its own.
func (s *Set) Validator(name string) (*Validator, error) {
	t, ok := s.Lookup(name)
	if !ok {
		return nil, fmt.Errorf("tool: validator for %q: %w", name, ErrNotFound)
	}
	if vt, ok := As[Validated](t); ok {
		if val := vt.Validator(); val != nil {
			return val, nil
		}
	}
	v := s.load()
	real := t.Spec().Name
	v.valMu.Lock()
	defer v.valMu.Unlock()
	if val, ok := v.vals[real]; ok {
		return val, nil
	}
	val, err := NewValidator(t.Spec().Schema)
	if err != nil {
		return nil, fmt.Errorf("tool: validator for %q: %w", real, err)
	}
	if v.vals == nil {
		v.vals = make(map[string]*Validator)
	}
	v.vals[real] = val
	return val, nil
}
