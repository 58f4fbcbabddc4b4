package sessiontest_test

import (
	"testing"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
)

func TestBuildersMakeBalancedLogs(t *testing.T) {
	logs := map[string][]session.Event{
		"full turns":   sessiontest.NewLog("s").FullTurn("a").FullTurn("b", "c1", "c2").Events,
		"all payloads": sessiontest.AllPayloads("s"),
	}
	for name, events := range logs {
		if err := session.Balanced(events); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestMemStore(t *testing.T) {
	sessiontest.RunStoreTests(t, func(t *testing.T) (session.Store, func() session.Store) {
		st := session.NewMemStore()
		return st, func() session.Store { return st }
	})
}
