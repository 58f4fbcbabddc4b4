package sessiontest

import (
	"context"
	"errors"
	"testing"

	"github.com/reinhq/rein/session"
)

// testSyncer checks a store that implements session.Syncer: AppendAsync
// keeps Append's rules and its events read back at once, mixed with
// Append; Sync returns for a session appended to, is ErrNotFound for a
// missing one and ErrClosed after Close. A store without Syncer skips.
func testSyncer(t *testing.T, st session.Store, reopen func() session.Store) {
	ctx := context.Background()
	cur := st
	if h, ok := st.(*Handle); ok {
		cur = h.Current()
	}
	if _, ok := cur.(session.Syncer); !ok {
		t.Skipf("%T does not implement session.Syncer", cur)
	}
	sync := func() session.Syncer {
		if h, ok := st.(*Handle); ok {
			return h.Current().(session.Syncer)
		}
		return st.(session.Syncer)
	}
	id := mustCreate(t, st, &session.CreateRequest{ID: "async"})
	l := NewLog(id).FullTurn("one", "c1").FullTurn("two")
	half := len(l.Events) / 2
	for i, e := range l.Events {
		var err error
		if i < half || i%2 == 0 {
			err = sync().AppendAsync(ctx, id, e)
		} else {
			err = st.Append(ctx, id, e)
		}
		if err != nil {
			t.Fatalf("append seq %d: %v", e.Seq, err)
		}
		if i == half {
			if err := sync().Sync(ctx, id); err != nil {
				t.Fatalf("Sync mid-log: %v", err)
			}
		}
	}
	if err := sync().AppendAsync(ctx, id, l.Events[0]); !errors.Is(err, session.ErrSeqConflict) {
		t.Errorf("AppendAsync of a used seq: err = %v, want ErrSeqConflict", err)
	}
	if err := sync().Sync(ctx, id); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	if diff := DiffEvents(l.Events, mustRead(t, st, id, 0)); diff != "" {
		t.Errorf("Events after AppendAsync mismatch (-want +got):\n%s", diff)
	}
	if err := sync().Sync(ctx, "no-such-session"); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Sync of a missing session: err = %v, want ErrNotFound", err)
	}
	st = reopen()
	if diff := DiffEvents(l.Events, mustRead(t, st, id, 0)); diff != "" {
		t.Errorf("Events after reopen mismatch (-want +got):\n%s", diff)
	}
	if err := sync().Sync(ctx, id); err != nil {
		t.Errorf("Sync of a session only read: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := sync().Sync(ctx, id); !errors.Is(err, session.ErrClosed) {
		t.Errorf("Sync after Close: err = %v, want ErrClosed", err)
	}
	if err := sync().AppendAsync(ctx, id, NewLog(id).StartTurn("x").Events...); !errors.Is(err, session.ErrClosed) {
		t.Errorf("AppendAsync after Close: err = %v, want ErrClosed", err)
	}
}
