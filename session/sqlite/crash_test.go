package sqlite_test

import (
	"path/filepath"
	"testing"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
	"github.com/reinhq/rein/session/sqlite"
)

// crash opens stores for the crash tests and their child processes.
var crash = &sessiontest.CrashOptions{
	Open: func(path string, d session.Durability) (session.Store, error) {
		return sqlite.Open(path, &sqlite.Options{Durability: d})
	},
	Path: func(t *testing.T) string { return filepath.Join(t.TempDir(), "sessions.db") },
}

// TestHelperProcess is the child the crash tests start; it does nothing
// in a normal test run.
func TestHelperProcess(t *testing.T) { sessiontest.RunCrashChild(t, crash) }

// TestCrash kills appending and lock-holding child processes with SIGKILL
// and checks that the database loses no acknowledged event, keeps no torn
// one, and is balanced after repair (B47, B48, B50).
func TestCrash(t *testing.T) { sessiontest.RunCrashTests(t, crash) }
