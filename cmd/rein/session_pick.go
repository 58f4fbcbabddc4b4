package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/reinhq/rein/session"
)

// workspace resolves --cwd to an absolute directory.
func workspace(cwd string) (string, error) {
	if cwd == "" {
		cwd = "."
	}
	root, err := filepath.Abs(cwd)
	if err != nil {
		return "", usageErrorf("--cwd %s: %v", cwd, err)
	}
	st, err := os.Stat(root)
	if err != nil || !st.IsDir() {
		return "", usageErrorf("--cwd %s: not a directory", cwd)
	}
	return root, nil
}

// resolveSession picks the session and reports whether it existed before:
// --fork makes a copy, --new-session creates one with the id given,
// --session opens one by its id or a unique prefix of it (in chat, an
// unknown id is created), and otherwise a new session is created in the
// workspace.
func resolveSession(ctx context.Context, st session.Store, f *agentFlags, root string) (session.ID, bool, error) {
	set := 0
	for _, v := range []string{f.fork, f.session, f.newSession} {
		if v != "" {
			set++
		}
	}
	if set > 1 {
		return "", false, usageErrorf("--fork, --session and --new-session exclude each other: give one")
	}
	switch {
	case f.fork != "":
		id, err := forkSession(ctx, st, f.fork)
		return id, false, err
	case f.newSession != "":
		id := session.ID(f.newSession)
		if err := session.CheckID(id); err != nil {
			return "", false, usageErrorf("--new-session %q: %v", f.newSession, err)
		}
		if _, err := st.Info(ctx, id); err == nil {
			return "", false, usageErrorf("--new-session %s: that session exists; continue it with --session %s", id, id)
		}
		id, err := st.Create(ctx, &session.CreateRequest{ID: id, WorkDir: root})
		return id, false, err
	case f.session != "" && f.existing:
		info, err := findSession(ctx, st, f.session)
		if err != nil {
			return "", false, err
		}
		return info.ID, true, nil
	case f.session != "":
		id := session.ID(f.session)
		if err := session.CheckID(id); err != nil {
			return "", false, usageErrorf("--session %q: %v", f.session, err)
		}
		if _, err := st.Info(ctx, id); err == nil {
			return id, true, nil
		} else if !errors.Is(err, session.ErrNotFound) {
			return "", false, err
		}
		id, err := st.Create(ctx, &session.CreateRequest{ID: id, WorkDir: root})
		return id, false, err
	}
	id, err := st.Create(ctx, &session.CreateRequest{WorkDir: root})
	return id, false, err
}

// forkSession forks spec, ID[@SEQ], and returns the new session's id.
func forkSession(ctx context.Context, st session.Store, spec string) (session.ID, error) {
	idStr, seqStr, hasSeq := strings.Cut(spec, "@")
	id := session.ID(idStr)
	info, err := st.Info(ctx, id)
	if err != nil {
		if errors.Is(err, session.ErrNotFound) {
			return "", usageErrorf("session %s not found; list them with 'rein sessions list'", id)
		}
		return "", err
	}
	seq := info.LastSeq
	if hasSeq {
		n, err := strconv.ParseInt(seqStr, 10, 64)
		if err != nil || n < 0 || n > info.LastSeq {
			return "", usageErrorf("fork %s: SEQ must be a number from 0 to %d", spec, info.LastSeq)
		}
		seq = n
	}
	return session.Fork(ctx, st, id, seq)
}
