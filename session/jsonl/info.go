package jsonl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/reinhq/rein/session"
)

// lastEvent reads the seq and time of the last committed event before
// offset end, reading only the end of the file.
func (s *Store) lastEvent(f *os.File, end int64) (int64, time.Time, bool) {
	for window := int64(64 << 10); ; window *= 4 {
		from := max(end-window, 0)
		b := make([]byte, end-from)
		if _, err := f.ReadAt(b, from); err != nil && err != io.EOF {
			return 0, time.Time{}, false
		}
		// Lines are complete only after the first newline of the window,
		// unless the window starts the file (whose first line is the header).
		for hi := len(b); hi > 0; {
			if b[hi-1] != '\n' {
				// An incomplete last line: skip back to the previous newline.
				i := bytes.LastIndexByte(b[:hi], '\n')
				if i < 0 {
					break
				}
				hi = i + 1
				continue
			}
			lo := bytes.LastIndexByte(b[:hi-1], '\n') + 1
			if lo == 0 && from > 0 {
				break // the line may start before the window
			}
			if lo == 0 && from == 0 {
				return 0, time.Time{}, false // only the header is left
			}
			var p struct {
				Pack int       `json:"pack"`
				Seq  int64     `json:"seq"`
				Time time.Time `json:"time"`
				DT   []int64   `json:"dt"`
			}
			if json.Unmarshal(b[lo:hi-1], &p) == nil && p.Seq > 0 {
				if p.Pack > 0 && len(p.DT) == p.Pack {
					return p.Seq + int64(p.Pack) - 1, p.Time.Add(time.Duration(p.DT[p.Pack-1])), true
				}
				return p.Seq, p.Time, true
			}
			hi = lo
		}
		if from == 0 {
			return 0, time.Time{}, false
		}
	}
}

type sidecar struct {
	Meta map[string]string `json:"meta"`
}

// Info describes session id from its header, its metadata file and the
// end of its log; it does not read the whole log.
func (s *Store) Info(ctx context.Context, id session.ID) (*session.Info, error) {
	st, err := s.known(id)
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := s.check(ctx, st, false, nil); err != nil {
		return nil, err
	}
	return s.info(id, st)
}

// info builds the Info of id. st may be nil; if it holds the session's
// lock its in-memory state is used.
func (s *Store) info(id session.ID, st *state) (*session.Info, error) {
	var (
		hdr     *header
		lastSeq int64
		updated time.Time
	)
	if st != nil && st.f != nil {
		hdr, lastSeq, updated = st.hdr, st.lastSeq, st.updated
	} else {
		f, err := os.Open(s.Path(id))
		if err != nil {
			return nil, notFound(id, err)
		}
		defer f.Close()
		lr := newLineReader(f, 0, 0)
		line, complete, err := lr.next()
		if err != nil || !complete {
			return nil, fmt.Errorf("jsonl: %s line 1: missing header: %w", f.Name(), session.ErrCorrupt)
		}
		if hdr, err = decodeHeader(line, f.Name()); err != nil {
			return nil, err
		}
		updated = hdr.Created
		if fi, err := f.Stat(); err == nil {
			if seq, t, ok := s.lastEvent(f, fi.Size()); ok {
				lastSeq, updated = seq, t
			}
		}
	}
	info := &session.Info{ID: id, Created: hdr.Created, Updated: updated, LastSeq: lastSeq, WorkDir: hdr.WorkDir, Parent: hdr.Parent}
	meta, err := s.readMeta(id, hdr)
	if err != nil {
		return nil, err
	}
	info.Meta = meta
	return info, nil
}

// readMeta returns the session's metadata: the sidecar file if there is
// one, else the header's.
func (s *Store) readMeta(id session.ID, hdr *header) (map[string]string, error) {
	b, err := os.ReadFile(s.metaPath(id))
	if errors.Is(err, fs.ErrNotExist) {
		if len(hdr.Meta) == 0 {
			return nil, nil
		}
		m := make(map[string]string, len(hdr.Meta))
		for k, v := range hdr.Meta {
			m[k] = v
		}
		return m, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jsonl: read metadata of %q: %w", id, err)
	}
	var sc sidecar
	if err := json.Unmarshal(b, &sc); err != nil {
		return nil, fmt.Errorf("jsonl: %s: %v: %w", s.metaPath(id), err, session.ErrCorrupt)
	}
	if len(sc.Meta) == 0 {
		return nil, nil
	}
	return sc.Meta, nil
}

// List describes every session in the directory, oldest first. It reads
// each file's header and end, not its whole log.
func (s *Store) List(ctx context.Context) ([]session.Info, error) {
	if s.sessions.Closed() {
		return nil, session.ErrClosed
	}
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("jsonl: list %s: %w", s.dir, err)
	}
	var out []session.Info
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".jsonl") {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		id := session.ID(strings.TrimSuffix(name, ".jsonl"))
		if validID(id) != nil {
			continue
		}
		st := s.sessions.Peek(id)
		var info *session.Info
		if st != nil {
			st.mu.Lock()
			info, err = s.info(id, st)
			st.mu.Unlock()
		} else {
			info, err = s.info(id, nil)
		}
		if errors.Is(err, session.ErrNotFound) {
			continue // deleted while listing
		}
		if err != nil {
			return nil, err
		}
		out = append(out, *info)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// SetMeta sets a metadata key of session id; an empty value removes it.
// Metadata lives in a sidecar file, <id>.meta.json, replaced atomically,
// so it never takes a seq from the log.
func (s *Store) SetMeta(ctx context.Context, id session.ID, key, value string) error {
	if err := s.writable("set metadata"); err != nil {
		return err
	}
	st, err := s.known(id)
	if err != nil {
		return err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	// The directory's flock serializes metadata updates across processes;
	// the append lock is the data file's, so an appender does not block
	// them.
	d, err := os.Open(s.dir)
	if err != nil {
		return fmt.Errorf("jsonl: set metadata of %q: %w", id, err)
	}
	defer d.Close()
	if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("jsonl: set metadata of %q: %w", id, err)
	}
	defer syscall.Flock(int(d.Fd()), syscall.LOCK_UN)
	f, err := os.Open(s.Path(id))
	if err != nil {
		return notFound(id, err)
	}
	defer f.Close()
	lr := newLineReader(f, 0, 0)
	line, complete, err := lr.next()
	if err != nil || !complete {
		return fmt.Errorf("jsonl: %s line 1: missing header: %w", f.Name(), session.ErrCorrupt)
	}
	hdr, err := decodeHeader(line, f.Name())
	if err != nil {
		return err
	}
	meta, err := s.readMeta(id, hdr)
	if err != nil {
		return err
	}
	if meta == nil {
		meta = map[string]string{}
	}
	if value == "" {
		delete(meta, key)
	} else {
		meta[key] = value
	}
	b, err := json.Marshal(sidecar{Meta: meta})
	if err != nil {
		return fmt.Errorf("jsonl: set metadata of %q: %w", id, err)
	}
	if err := s.replaceFile(s.metaPath(id), append(b, '\n')); err != nil {
		return fmt.Errorf("jsonl: set metadata of %q: %w", id, err)
	}
	return nil
}

// replaceFile writes path atomically: a temporary file renamed over it.
func (s *Store) replaceFile(path string, b []byte) error {
	tmp, err := os.CreateTemp(s.dir, ".meta-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(b)
	if err == nil && s.opts.Durability != DurabilityNever {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	if s.opts.Durability != DurabilityNever {
		return syncDir(s.dir)
	}
	return nil
}
