package session_test

import (
	"testing"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
)

func TestMemStoreConformance(t *testing.T) {
	sessiontest.RunStoreTests(t, func(t *testing.T) (session.Store, func() session.Store) {
		st := session.NewMemStore()
		return st, func() session.Store { return st }
	})
}
