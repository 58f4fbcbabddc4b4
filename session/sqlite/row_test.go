package sqlite_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/session"
)

// A batch within a turn leaves the session row behind its events; Info,
// List and a later Store's append still go by the newest event, and a
// turn's end brings the row up to date.
func TestSessionRowFollowsTurnEnds(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	st, id := openSessionAt(t, path, "")
	t0 := time.Unix(1700000000, 0)
	evs := []session.Event{
		{Seq: 1, Time: t0, Turn: "t1", Data: &session.TurnStart{Trigger: session.TriggerPrompt}},
		{Seq: 2, Time: t0.Add(time.Second), Turn: "t1", Data: &session.StepStart{Step: 1}},
		{Seq: 3, Time: t0.Add(2 * time.Second), Turn: "t1", Data: &session.StepEnd{Step: 1}},
		{Seq: 4, Time: t0.Add(3 * time.Second), Turn: "t1", Data: &session.StepStart{Step: 2}},
	}
	for _, ev := range evs {
		if err := st.AppendAsync(ctx, id, ev); err != nil {
			t.Fatalf("AppendAsync seq %d: %v", ev.Seq, err)
		}
	}
	var rowSeq int64
	if err := st.DB().QueryRowContext(ctx, `SELECT last_seq FROM sessions WHERE id = ?`, string(id)).Scan(&rowSeq); err != nil {
		t.Fatal(err)
	}
	if rowSeq != 0 {
		t.Errorf("row's last_seq = %d within the turn, want 0 (set at the turn's end)", rowSeq)
	}
	check := func(st interface {
		Info(context.Context, session.ID) (*session.Info, error)
		List(context.Context) ([]session.Info, error)
	}, wantSeq int64, wantTime time.Time) {
		t.Helper()
		info, err := st.Info(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		list, err := st.List(ctx)
		if err != nil || len(list) != 1 {
			t.Fatalf("List: %d sessions, %v", len(list), err)
		}
		type got struct {
			Seq  int64
			Time time.Time
		}
		want := got{wantSeq, wantTime}
		if diff := cmp.Diff(want, got{info.LastSeq, info.Updated}); diff != "" {
			t.Errorf("Info (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, got{list[0].LastSeq, list[0].Updated}); diff != "" {
			t.Errorf("List (-want +got):\n%s", diff)
		}
	}
	check(st, 4, evs[3].Time)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st2 := open(t, path, nil)
	defer st2.Close()
	check(st2, 4, evs[3].Time)
	next := session.Event{Seq: 5, Time: t0.Add(4 * time.Second), Turn: "t1", Data: &session.StepEnd{Step: 2}}
	if err := st2.Append(ctx, id, next); err != nil {
		t.Fatalf("Append after the row's last_seq: %v", err)
	}
	check(st2, 5, next.Time)
	end := session.Event{Seq: 6, Time: t0.Add(5 * time.Second), Turn: "t1", Data: &session.TurnEnd{Reason: session.EndCompleted}}
	if err := st2.AppendAsync(ctx, id, end); err != nil {
		t.Fatalf("AppendAsync of the turn's end: %v", err)
	}
	var rowTime int64
	if err := st2.DB().QueryRowContext(ctx, `SELECT last_seq, updated FROM sessions WHERE id = ?`, string(id)).Scan(&rowSeq, &rowTime); err != nil {
		t.Fatal(err)
	}
	if rowSeq != 6 || rowTime != end.Time.UnixNano() {
		t.Errorf("row after the turn's end: last_seq %d, updated %d; want 6, %d", rowSeq, rowTime, end.Time.UnixNano())
	}
	check(st2, 6, end.Time)
}

// Header strings of any bytes (digits and commas, a NUL, control and
// non-ASCII characters, empty ones), negative times and payloads of any
// type are read back as they were appended.
func TestEventHeadersReadBackExactly(t *testing.T) {
	ctx := context.Background()
	st, id := openSession(t, "h")
	t0 := time.Unix(0, -1_500_000_000)
	want := []session.Event{
		{Seq: 1, Time: t0, Turn: "12,3,", Run: "r\x00n", Data: &session.TurnStart{Trigger: session.TriggerPrompt}},
		{Seq: 2, Time: t0.Add(time.Nanosecond), Turn: "12,3,", Run: "r\x00n", ParentRun: "p\x1f,", Agent: "ägent 7",
			Data: &session.StepStart{Step: 1}},
		{Seq: 3, Time: time.Unix(1700000000, 7), Turn: "", Run: "", Agent: ",", Data: &session.Unknown{Type: "x,9\x00", Raw: []byte(`{"a":[1,"\u0000"]}`)}},
		{Seq: 4, Time: time.Unix(1700000000, 8), Turn: "t", Data: &session.TurnEnd{Reason: session.EndCompleted}},
	}
	if err := st.Append(ctx, id, want...); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		want[i].Session = id
	}
	var got []session.Event
	for e, err := range st.Events(ctx, id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })); diff != "" {
		t.Errorf("Events (-want +got):\n%s", diff)
	}
}

// A batch whose data cannot be encoded (an unknown event's raw data that
// is not JSON) is refused whole, with the event named, and writes
// nothing; the rows of a batch share one buffer, so each reads back its
// own data.
func TestBadDataRefusesTheBatch(t *testing.T) {
	ctx := context.Background()
	st, id := openSession(t, "bad")
	at := time.Unix(1700000000, 0)
	bad := []session.Event{
		{Seq: 1, Time: at, Data: &session.StepStart{Step: 1}},
		{Seq: 2, Time: at, Data: &session.Unknown{Type: "x.y", Raw: []byte(`{"a":`)}},
	}
	err := st.Append(ctx, id, bad...)
	if err == nil || !strings.Contains(err.Error(), "event seq 2") || !strings.Contains(err.Error(), "not valid JSON") {
		t.Fatalf("Append with bad raw data: err = %v, want one naming event seq 2 and its data", err)
	}
	good := []session.Event{
		{Seq: 1, Time: at, Data: &session.Unknown{Type: "x.y", Raw: []byte(`{"long":"` + strings.Repeat("a", 300) + `"}`)}},
		{Seq: 2, Time: at, Data: &session.Unknown{Type: "x.z"}},
		{Seq: 3, Time: at, Data: &session.StepStart{Step: 1}},
	}
	if err := st.Append(ctx, id, good...); err != nil {
		t.Fatalf("Append after the refused batch (same seqs): %v", err)
	}
	var got []string
	for ev, err := range st.Events(ctx, id, 0) {
		if err != nil {
			t.Fatal(err)
		}
		b, err := session.AppendPayloadJSON(nil, ev.Data)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(b))
	}
	want := []string{`{"long":"` + strings.Repeat("a", 300) + `"}`, `null`, `{"step":1}`}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("data read back (-want +got):\n%s", diff)
	}
}
