package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/reinhq/rein/session"
)

// findSession resolves what a user typed for a session: its whole id or a
// prefix only one session's id starts with. An unknown or ambiguous id is
// a usage error that lists the closest ids.
func findSession(ctx context.Context, st session.Store, given string) (*session.Info, error) {
	if session.CheckID(session.ID(given)) == nil {
		info, err := st.Info(ctx, session.ID(given))
		if err == nil {
			return info, nil
		}
		if !errors.Is(err, session.ErrNotFound) {
			return nil, err
		}
	}
	infos, err := st.List(ctx)
	if err != nil {
		return nil, err
	}
	var matches []session.Info
	for _, in := range infos {
		if given != "" && strings.HasPrefix(string(in.ID), given) {
			matches = append(matches, in)
		}
	}
	switch len(matches) {
	case 1:
		return &matches[0], nil
	case 0:
		msg := fmt.Sprintf("session %s not found in this store", given)
		if near := closestIDs(given, infos, 3); len(near) > 0 {
			msg += "; the closest: " + strings.Join(near, ", ")
		}
		return nil, usageErrorf("%s; list them with 'rein sessions list'", msg)
	}
	ids := make([]string, len(matches))
	for i, m := range matches {
		ids[i] = string(m.ID)
	}
	slices.Sort(ids)
	if len(ids) > 5 {
		ids = append(ids[:5], "…")
	}
	return nil, usageErrorf("session %s is ambiguous: %d ids start with it (%s); type more of it", given, len(matches), strings.Join(ids, ", "))
}

// closestIDs returns up to n session ids nearest to s by edit distance,
// leaving out those too far to be a typing slip.
func closestIDs(s string, infos []session.Info, n int) []string {
	type near struct {
		id   string
		dist int
	}
	var all []near
	for _, in := range infos {
		id := string(in.ID)
		d := editDistance(s, id)
		if d <= max(len(s), len(id))/2 {
			all = append(all, near{id, d})
		}
	}
	slices.SortFunc(all, func(a, b near) int {
		return cmp.Or(cmp.Compare(a.dist, b.dist), strings.Compare(a.id, b.id))
	})
	var out []string
	for i := 0; i < len(all) && i < n; i++ {
		out = append(out, all[i].id)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// continueLatest points --session at the workspace's latest session, for
// --continue.
func (a *app) continueLatest(ctx context.Context, f *agentFlags) error {
	if f.session != "" || f.fork != "" || f.newSession != "" {
		return usageErrorf("--continue picks the session itself; leave out --session, --new-session and --fork")
	}
	root, err := workspace(f.cwd)
	if err != nil {
		return err
	}
	st, err := a.openStore()
	if err != nil {
		return err
	}
	defer st.Close()
	id, err := latestSession(ctx, st, root)
	if err != nil {
		return usageErrorf("--continue: %v", err)
	}
	f.session = string(id)
	return nil
}
