package jsonl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/reinhq/rein/session"
)

// On a file system without user attributes the holder is recorded in
// <id>.lock instead, which a clean Close removes.
func TestHolderRecordWithoutUserAttributes(t *testing.T) {
	get, set := getAttr, setAttr
	t.Cleanup(func() { getAttr, setAttr = get, set })
	getAttr = func(int, string, []byte) (int, error) { return 0, unix.ENOTSUP }
	setAttr = func(int, string, []byte, int) error { return unix.ENOTSUP }

	ctx := context.Background()
	dir := t.TempDir()
	st, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, &session.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Append(ctx, "s", session.Event{Seq: 1, Session: "s", Data: &session.SessionMeta{Key: "k", Value: "v"}}); err != nil {
		t.Fatal(err)
	}
	legacy := filepath.Join(dir, "s.lock")
	b, err := os.ReadFile(legacy)
	if err != nil || !strings.Contains(string(b), fmt.Sprintf(`"pid":%d`, os.Getpid())) {
		t.Errorf("%s while appending: %q, %v; want this process", legacy, b, err)
	}
	other, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = other.Append(ctx, "s", session.Event{Seq: 2, Session: "s", Data: &session.SessionMeta{Key: "k", Value: "w"}})
	if !errors.Is(err, session.ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d", os.Getpid())) {
		t.Errorf("another Store's Append: %v, want ErrLocked naming pid %d", err, os.Getpid())
	}
	other.Close()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(legacy); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after Close: %v, want it gone", legacy, err)
	}
}
