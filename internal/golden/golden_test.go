package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder catches failures so the test can check Check reports them.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Fatal(...any)          { r.failed = true }

func TestCheck(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "out.txt")
	r := &recorder{TB: t}
	Check(r, path, []byte("x"))
	if !r.failed {
		t.Error("a missing golden file passed")
	}

	*Update = true
	Check(t, path, []byte("hello\n"))
	*Update = false
	if b, err := os.ReadFile(path); err != nil || string(b) != "hello\n" {
		t.Fatalf("-update wrote %q, %v", b, err)
	}
	Check(t, path, []byte("hello\n"))

	r = &recorder{TB: t}
	Check(r, path, []byte("changed\n"))
	if !r.failed {
		t.Error("a different output passed")
	}
}
