package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/reinhq/rein/session"
)

// Info describes session id.
func (s *Store) Info(ctx context.Context, id session.ID) (*session.Info, error) {
	st, err := s.get(id)
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	err = s.check(ctx, id, st, false)
	st.mu.Unlock()
	if err != nil {
		return nil, err
	}
	infos, err := s.list(ctx, `WHERE id = ?`, string(id))
	if err != nil {
		return nil, err
	}
	if len(infos) == 0 {
		return nil, fmt.Errorf("sqlite: session %q: %w", id, session.ErrNotFound)
	}
	return &infos[0], nil
}

// List describes every session, oldest first.
func (s *Store) List(ctx context.Context) ([]session.Info, error) {
	if s.isClosed() {
		return nil, session.ErrClosed
	}
	return s.list(ctx, ``)
}

func (s *Store) list(ctx context.Context, where string, args ...any) ([]session.Info, error) {
	if err := s.readable(); err != nil {
		return nil, fmt.Errorf("sqlite: list sessions: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, created, `+newestTime+`, `+newestSeq+`, workdir, parent, meta FROM sessions `+where+` ORDER BY created, id`, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlite: list sessions: %w", err)
	}
	defer rows.Close()
	var out []session.Info
	for rows.Next() {
		var (
			info             session.Info
			id, parent, meta string
			created, updated int64
		)
		if err := rows.Scan(&id, &created, &updated, &info.LastSeq, &info.WorkDir, &parent, &meta); err != nil {
			return nil, fmt.Errorf("sqlite: list sessions: %w", err)
		}
		info.ID, info.Parent = session.ID(id), session.ID(parent)
		info.Created, info.Updated = time.Unix(0, created), time.Unix(0, updated)
		if meta != "{}" && meta != "" {
			if err := json.Unmarshal([]byte(meta), &info.Meta); err != nil {
				return nil, fmt.Errorf("sqlite: session %q: metadata: %v: %w", id, err, session.ErrCorrupt)
			}
		}
		out = append(out, info)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlite: list sessions: %w", err)
	}
	return out, nil
}

// SetMeta sets a metadata key of session id; an empty value removes it.
func (s *Store) SetMeta(ctx context.Context, id session.ID, key, value string) error {
	if s.isClosed() {
		return session.ErrClosed
	}
	err := s.write(ctx, false, false, func(c conn) error {
		var raw string
		if err := c.QueryRowContext(ctx, `SELECT meta FROM sessions WHERE id = ?`, string(id)).Scan(&raw); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("sqlite: session %q: %w", id, session.ErrNotFound)
			}
			return err
		}
		meta := map[string]string{}
		if err := json.Unmarshal([]byte(raw), &meta); err != nil {
			return fmt.Errorf("sqlite: session %q: metadata: %v: %w", id, err, session.ErrCorrupt)
		}
		if value == "" {
			delete(meta, key)
		} else {
			meta[key] = value
		}
		b, err := json.Marshal(meta)
		if err != nil {
			return err
		}
		_, err = c.ExecContext(ctx, `UPDATE sessions SET meta = ? WHERE id = ?`, string(b), string(id))
		return err
	})
	if err != nil && !errors.Is(err, session.ErrNotFound) && !errors.Is(err, session.ErrCorrupt) && !errors.Is(err, session.ErrClosed) {
		return fmt.Errorf("sqlite: set metadata of %q: %w", id, err)
	}
	return err
}
