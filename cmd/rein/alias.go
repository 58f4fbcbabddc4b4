package main

import (
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/llm"
)

// expandModel completes a --model value from the catalog: a model id or
// one of its aliases without a provider ("claude-sonnet-4-5", "gpt-5")
// gets its provider, and a family's short name ("sonnet", "opus",
// "haiku"), with or without its provider, names the family's newest model.
// Anything else is returned as it is, for resolveTarget to judge.
func expandModel(spec string) string {
	name, model, hasProvider := strings.Cut(spec, "/")
	if hasProvider {
		if _, ok := lookupProvider(name); ok {
			if id, ok := familyAliases()[model]; ok && llmProvider(id) == name {
				return name + "/" + id
			}
			return spec
		}
	}
	if id, ok := familyAliases()[spec]; ok {
		return llmProvider(id) + "/" + id
	}
	if m, ok := llm.DefaultCatalog().Lookup(spec); ok {
		return m.Provider + "/" + spec
	}
	return spec
}

func llmProvider(id string) string {
	m, _ := llm.DefaultCatalog().Lookup(id)
	return m.Provider
}

// familyAliases maps a family's short name to its newest model in the
// catalog: the word after "claude-" in the Anthropic ids, the highest
// version (claude-sonnet-4-5 over claude-sonnet-4-0) winning.
func familyAliases() map[string]string {
	out := map[string]string{}
	for _, m := range llm.DefaultCatalog().All() {
		rest, ok := strings.CutPrefix(m.ID, "claude-")
		if !ok {
			continue
		}
		fam, _, _ := strings.Cut(rest, "-")
		if fam == "" || strings.ContainsAny(fam, "0123456789") {
			continue
		}
		if m.ID > out[fam] {
			out[fam] = m.ID
		}
	}
	return out
}

// familyNames are the family short names, sorted.
func familyNames() []string {
	var out []string
	for fam := range familyAliases() {
		out = append(out, fam)
	}
	slices.Sort(out)
	return out
}

// modelCompletions are the values --model completes to: every catalog
// model as PROVIDER/ID, the family short names, and the providers that
// take any model name.
func modelCompletions() []string {
	var out []string
	for _, m := range llm.DefaultCatalog().All() {
		out = append(out, m.Provider+"/"+m.ID)
	}
	out = append(out, familyNames()...)
	for _, p := range providers {
		out = append(out, p.name+"/")
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// storeCompletions are the kinds of --store value.
var storeCompletions = []string{"sqlite:", "jsonl:", "postgres://", "mem:"}

// completeStore registers the completion of --store's kinds on root.
func completeStore(root *cobra.Command) {
	root.RegisterFlagCompletionFunc("store", cobra.FixedCompletions(storeCompletions, cobra.ShellCompDirectiveNoSpace))
}

// completeFlagValues registers the completion of the agent flags' values.
func completeFlagValues(cmd *cobra.Command) {
	fixed := func(name string, values func() []string, dir cobra.ShellCompDirective) {
		cmd.RegisterFlagCompletionFunc(name, func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return values(), dir
		})
	}
	fixed("model", modelCompletions, cobra.ShellCompDirectiveNoFileComp)
	fixed("approve", func() []string { return []string{"auto", "ask", "deny"} }, cobra.ShellCompDirectiveNoFileComp)
}
