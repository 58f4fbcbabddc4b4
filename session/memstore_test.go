package session_test

import (
	"context"
	"sync"
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

// TestMemStoreOwnedBatches appends owned batches carved one after another
// from one array, as the agent's log writer does, while readers iterate
// from every offset: each reader sees a gapless run of seqs from its
// offset, whatever batch boundaries the store merged.
func TestMemStoreOwnedBatches(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemStore()
	id, err := st.Create(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	const total = 300
	block := make([]session.Event, 0, 64)
	var wg sync.WaitGroup
	read := func(after int64) {
		defer wg.Done()
		want := after + 1
		for ev, err := range st.Events(ctx, id, after) {
			if err != nil {
				t.Error(err)
				return
			}
			if ev.Seq != want {
				t.Errorf("after %d: got seq %d, want %d", after, ev.Seq, want)
				return
			}
			want++
		}
	}
	for seq := int64(1); seq <= total; {
		if cap(block)-len(block) < 3 {
			block = make([]session.Event, 0, 64)
		}
		n := len(block)
		for range 3 {
			block = append(block, session.Event{Seq: seq, Data: &session.StepStart{Step: int(seq)}})
			seq++
		}
		if err := st.AppendOwned(ctx, id, block[n:]...); err != nil {
			t.Fatal(err)
		}
		for _, after := range []int64{0, seq / 2, seq - 2} {
			wg.Add(1)
			go read(after)
		}
	}
	wg.Wait()
	var got []int64
	for ev, err := range st.Events(ctx, id, 100) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev.Seq)
	}
	if len(got) != total-100 || got[0] != 101 || got[len(got)-1] != total {
		t.Fatalf("after 100: %d events, %v … %v", len(got), got[:1], got[len(got)-1:])
	}
	if ev := block[len(block)-1]; ev.Session != id {
		t.Errorf("owned event names session %q, want %q", ev.Session, id)
	}
}
