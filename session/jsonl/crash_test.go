package jsonl_test

import (
	"testing"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/jsonl"
	"github.com/reinhq/rein/session/sessiontest"
)

// crash opens stores for the crash tests and their child processes.
var crash = &sessiontest.CrashOptions{
	Open: func(dir string, d session.Durability) (session.Store, error) {
		return jsonl.Open(dir, &jsonl.Options{Durability: d})
	},
	Modes: map[string]sessiontest.ChildFunc{"fsize": fsizeChild},
}

// TestHelperProcess is the child the crash tests start; it does nothing
// in a normal test run.
func TestHelperProcess(t *testing.T) { sessiontest.RunCrashChild(t, crash) }

// TestCrash kills appending and lock-holding child processes with SIGKILL
// and checks that the directory loses no acknowledged event, keeps no torn
// one, and is balanced after repair (B47, B48, B50).
func TestCrash(t *testing.T) { sessiontest.RunCrashTests(t, crash) }
