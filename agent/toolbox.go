package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
)

// toolbox is the tools one request offers: built whole, then only read,
// so a step takes the current one and keeps using it while the host's
// dynamic tools change under it.
type toolbox struct {
	byName map[string]*toolEntry
	set    *tool.Set // resolves aliases; nil when Options.ToolSet is nil
	specs  []llm.ToolSpec
	names  []string
	hash   string
	tokens int64 // estimated tokens of the definitions
}

type toolEntry struct {
	t      tool.Tool
	spec   tool.Spec
	v      *validator
	origin string
	rerun  bool // a resume may run a started call again (tool.Rerunnable)
}

// lookup finds the tool the model named, through the set's aliases.
func (b *toolbox) lookup(name string) *toolEntry {
	if e := b.byName[name]; e != nil {
		return e
	}
	if b.set != nil {
		if real, ok := b.set.Canonical(name); ok {
			return b.byName[real]
		}
	}
	return nil
}

// newToolbox checks ts (names unique, schemas usable) and builds the
// toolbox; dryRun wraps every tool with tool.DryRun.
func newToolbox(ts []tool.Tool, set *tool.Set, dryRun bool) (*toolbox, error) {
	b := &toolbox{byName: make(map[string]*toolEntry, len(ts)), set: set}
	h := sha256.New()
	for _, t := range ts {
		spec := t.Spec()
		if spec.Name == "" {
			return nil, fmt.Errorf("agent: a tool has no name")
		}
		if _, dup := b.byName[spec.Name]; dup {
			return nil, fmt.Errorf("agent: two tools are named %q; names must be unique", spec.Name)
		}
		v, err := validatorOf(t, spec)
		if err != nil {
			return nil, fmt.Errorf("agent: tool %q: %w", spec.Name, err)
		}
		origin, rerun := tool.OriginOf(t), tool.Rerunnable(t)
		if dryRun {
			t = tool.DryRun(t)
		}
		b.byName[spec.Name] = &toolEntry{t: t, spec: spec, v: v, origin: origin, rerun: rerun}
		schema := spec.Schema
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		ls := llm.ToolSpec{Name: spec.Name, Description: spec.Description, Schema: schema}
		b.specs = append(b.specs, ls)
		b.names = append(b.names, spec.Name)
		b.tokens += estimateTool(ls)
		for _, part := range [][]byte{[]byte(spec.Name), schema, []byte(spec.Description)} {
			h.Write(part)
			h.Write([]byte{0})
		}
	}
	if len(b.specs) > 0 {
		b.hash = hex.EncodeToString(h.Sum(nil)[:8])
	}
	return b, nil
}

// validatorOf returns the validator of t's arguments: its own when it
// has one, else one built from its schema.
func validatorOf(t tool.Tool, spec tool.Spec) (*validator, error) {
	if tv, ok := tool.As[tool.Validated](t); ok && tv.Validator() != nil {
		return &validator{tv.Validator()}, nil
	}
	return newValidator(spec.Schema)
}

// withSets returns base followed by the tools of sets.
func withSets(base []tool.Tool, sets []*tool.Set) []tool.Tool {
	out := base[:len(base):len(base)]
	for _, s := range sets {
		if s != nil {
			out = append(out, s.Tools()...)
		}
	}
	return out
}

// refreshTools takes up a change of Options.DynamicTools at a step
// boundary: the toolbox and the header keys are rebuilt, so the next
// request offers the new list and records it. A list that cannot be used
// (two tools of one name) is logged and the old one kept.
func (a *Agent) refreshTools() {
	if a.opts.DynamicTools == nil {
		return
	}
	sets := a.opts.DynamicTools()
	if slices.Equal(sets, a.dynSets) {
		return
	}
	b, err := newToolbox(withSets(a.baseTools, sets), a.opts.ToolSet, a.opts.DryRun)
	if err != nil {
		a.log.Warn("the changed tool list is not usable; keeping the old one", "session", a.w.session(), "err", err)
		return
	}
	a.dynSets = sets
	a.setToolbox(b)
}

// setToolbox makes b the tools of the next requests.
func (a *Agent) setToolbox(b *toolbox) {
	a.tb.Store(b)
	keys := make([]string, len(a.targets))
	for i, t := range a.targets {
		keys[i] = headerKey(t.Provider, t.Model, a.sys.hash, b.hash, string(a.sampling))
	}
	a.keys.Store(&keys)
}

// entry is the tool the model named in this step, with the run's tool
// middleware around it.
func (r *runState) entry(name string) *toolEntry {
	e := r.tb.lookup(name)
	if e == nil || len(r.toolMWs) == 0 {
		return e
	}
	if w := r.wrapped[e.spec.Name]; w != nil {
		return w
	}
	w := *e
	w.t = tool.Wrap(e.t, r.toolMWs...)
	if r.wrapped == nil {
		r.wrapped = map[string]*toolEntry{}
	}
	r.wrapped[e.spec.Name] = &w
	return &w
}

// useTools makes b the tools of the step.
func (r *runState) useTools(b *toolbox) {
	if r.tb != b {
		r.tb, r.wrapped = b, nil
	}
}
