package jsonl_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
)

// holderRecord returns the record of the holder kept on a session's file.
func holderRecord(path string) string {
	buf := make([]byte, 256)
	n, err := unix.Getxattr(path, "user.rein.holder", buf)
	if err != nil {
		return ""
	}
	return string(buf[:n])
}

// A session's lock needs no file of its own: while a Store appends, the
// session's file names it, and another Store's error says who holds it;
// a clean Close removes the record, and the session opens again for
// appending, in this store or the next.
func TestLockRecordsItsHolderOnTheSessionFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	id := session.ID("s1")
	for round := range 2 {
		st := open(t, dir, nil)
		if round == 0 {
			if _, err := st.Create(ctx, &session.CreateRequest{ID: id}); err != nil {
				t.Fatal(err)
			}
		}
		ev := session.Event{Seq: int64(round + 1), Session: id, Data: &session.SessionMeta{Key: "k", Value: "v"}}
		if err := st.Append(ctx, id, ev); err != nil {
			t.Fatalf("round %d: Append: %v", round, err)
		}
		if rec := holderRecord(st.Path(id)); !strings.Contains(rec, fmt.Sprintf(`"pid":%d`, os.Getpid())) {
			t.Errorf("round %d: holder record while appending = %q, want this process", round, rec)
		}
		other := open(t, dir, nil)
		ev.Seq++
		err := other.Append(ctx, id, ev)
		if !errors.Is(err, session.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
			t.Errorf("round %d: another Store's Append: %v, want ErrLocked naming pid %d", round, err, os.Getpid())
		}
		other.Close()
		if locks, _ := filepath.Glob(filepath.Join(dir, "*.lock")); len(locks) != 0 {
			t.Errorf("round %d: lock files while appending: %v", round, locks)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		if rec := holderRecord(st.Path(id)); rec != "" {
			t.Errorf("round %d: holder record after Close: %q", round, rec)
		}
	}
}

// The record a process that died while appending left on the session's
// file makes the next open close the turn it left open; an open turn of
// a Store that closed cleanly is left for its owner.
func TestHolderRecordMarksACrash(t *testing.T) {
	ctx := context.Background()
	for _, crashed := range []bool{true, false} {
		l := sessiontest.NewLog("s").FullTurn("one").StartTurn("two")
		dir, path := setup(t, l.Events)
		if crashed {
			rec := []byte(`{"pid":4194000,"host":"gone","since":"2026-01-01T00:00:00Z"}`)
			if err := unix.Setxattr(path, "user.rein.holder", rec, 0); err != nil {
				t.Fatal(err)
			}
		}
		st := open(t, dir, nil)
		got, err := sessiontest.ReadAll(ctx, st, "s", 0)
		st.Close()
		if err != nil {
			t.Fatal(err)
		}
		repaired := len(got) > len(l.Events)
		if repaired != crashed {
			t.Errorf("crashed %v: read %d events of %d written, want a repair only after a crash", crashed, len(got), len(l.Events))
		}
		if crashed && session.Balanced(got) != nil {
			t.Errorf("after the crash: %v", session.Balanced(got))
		}
		if rec := holderRecord(path); rec != "" {
			t.Errorf("crashed %v: holder record after the repair: %q", crashed, rec)
		}
	}
}

// A store of an earlier version locked <id>.lock: while a process of one
// holds it, the session is held; a record it left in the file when it
// died marks a crash, and the file goes once the crash is repaired.
func TestEarlierVersionsLockFile(t *testing.T) {
	ctx := context.Background()
	l := sessiontest.NewLog("s").FullTurn("one").StartTurn("two")
	dir, _ := setup(t, l.Events)
	legacy := filepath.Join(dir, "s.lock")
	rec := []byte(`{"pid":4194000,"host":"gone","since":"2026-01-01T00:00:00Z"}` + "\n")
	if err := os.WriteFile(legacy, rec, 0o644); err != nil {
		t.Fatal(err)
	}
	held, err := os.Open(legacy)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	st := open(t, dir, nil)
	defer st.Close()
	next := sessiontest.NewLog("s").FullTurn("one").StartTurn("two").FullTurn("three").Events[len(l.Events):]
	if err := st.Append(ctx, "s", next...); !errors.Is(err, session.ErrLocked) || !strings.Contains(err.Error(), "pid 4194000") {
		t.Fatalf("Append while an earlier version holds the lock: %v, want ErrLocked naming its pid", err)
	}
	held.Close() // that process dies
	got, err := sessiontest.ReadAll(ctx, st, "s", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) <= len(l.Events) || session.Balanced(got) != nil {
		t.Errorf("read %d events of %d written (%v), want the crash repaired", len(got), len(l.Events), session.Balanced(got))
	}
	if _, err := os.Stat(legacy); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the earlier version's lock file after the repair: %v, want it gone", err)
	}
}
