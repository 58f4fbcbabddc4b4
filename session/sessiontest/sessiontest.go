// Package sessiontest is the conformance suite every session.Store passes,
// the crash tests every durable store passes, and helpers that build
// realistic session logs for tests and benchmarks.
//
// Quick start, in a durable store's own test (a Handle lets the suite
// reopen the store under code that still holds it):
//
//	func TestConformance(t *testing.T) {
//		sessiontest.RunStoreTests(t, func(t *testing.T) (session.Store, func() session.Store) {
//			dir := t.TempDir()
//			h := sessiontest.NewHandle(t, func() (session.Store, error) { return mystore.Open(dir, nil) })
//			return h, h.Reopen
//		})
//	}
//
// RunCrashTests kills child processes that append and hold locks (see
// its example); Mix, BenchAppend, BenchEventsTail and
// BenchOpenRepairDerive give every store the same benchmarks.
package sessiontest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// Base is the time of the first event the builders make.
var Base = time.Date(2026, 3, 14, 15, 9, 26, 535897000, time.UTC)

// Log builds a session log event by event with consecutive seqs, as the
// loop writes it. The zero Log is not usable; use NewLog.
type Log struct {
	Session session.ID
	Turn    session.TurnID
	Run     session.RunID
	Events  []session.Event
	nturn   int
	step    int
}

// NewLog returns a builder for session id.
func NewLog(id session.ID) *Log { return &Log{Session: id, Run: "run-1"} }

// Add appends an event with the next seq and the current turn and run.
func (l *Log) Add(p session.Payload) *Log {
	seq := int64(len(l.Events) + 1)
	l.Events = append(l.Events, session.Event{
		Seq:     seq,
		Time:    Base.Add(time.Duration(seq) * time.Millisecond),
		Session: l.Session,
		Turn:    l.Turn,
		Run:     l.Run,
		Data:    p,
	})
	return l
}

// StartTurn opens a turn with a user prompt.
func (l *Log) StartTurn(prompt string) *Log {
	l.nturn++
	l.step = 0
	l.Turn = session.TurnID(fmt.Sprintf("turn-%d", l.nturn))
	l.Add(&session.TurnStart{Trigger: session.TriggerPrompt})
	return l.Add(&session.UserMessage{Parts: []llm.Part{&llm.Text{Text: prompt}}, Source: session.SourceUser})
}

// Step logs one step: step.start, the assistant message (text, then one
// call per entry of calls), a tool.call and a tool.result per call (the
// result text is "result of " + call id), and step.end.
func (l *Log) Step(text string, calls ...string) *Log {
	l.OpenStep(text, calls...)
	for _, id := range calls {
		l.Result(id, "result of "+id)
	}
	return l.EndStep()
}

// OpenStep logs step.start and the assistant message of a step, leaving
// the calls without results and the step open.
func (l *Log) OpenStep(text string, calls ...string) *Log {
	l.step++
	l.Add(&session.StepStart{Step: l.step})
	var parts []llm.Part
	if text != "" {
		parts = append(parts, &llm.Text{Text: text})
	}
	for _, id := range calls {
		parts = append(parts, &llm.ToolCall{ID: llm.CallID(id), Name: "echo", Args: json.RawMessage(`{"id":"` + id + `"}`)})
	}
	finish := llm.FinishStop
	if len(calls) > 0 {
		finish = llm.FinishToolCalls
	}
	return l.Add(&session.AssistantMessage{
		Parts:      parts,
		Provenance: &llm.Provenance{Provider: "scripted", Model: "test-1"},
		Usage:      llm.Usage{Input: 10, Output: 5},
		Finish:     finish,
	})
}

// Started logs that call id started executing.
func (l *Log) Started(id string) *Log {
	return l.Add(&session.ToolCall{CallID: llm.CallID(id), Name: "echo", Args: json.RawMessage(`{"id":"` + id + `"}`), Origin: "native"})
}

// Result logs the result of call id.
func (l *Log) Result(id, text string) *Log {
	l.Started(id)
	return l.Add(&session.ToolResult{CallID: llm.CallID(id), Name: "echo", Parts: []llm.Part{&llm.Text{Text: text}}, Outcome: session.OutcomeExecute, Duration: time.Millisecond})
}

// EndStep logs step.end for the open step.
func (l *Log) EndStep() *Log {
	return l.Add(&session.StepEnd{Step: l.step, Usage: llm.Usage{Input: 10, Output: 5}, Finish: llm.FinishStop})
}

// EndTurn logs turn.end{completed}.
func (l *Log) EndTurn() *Log {
	return l.Add(&session.TurnEnd{Reason: session.EndCompleted})
}

// FullTurn logs a whole turn: the prompt, a step calling the tools in calls,
// and a final answer step.
func (l *Log) FullTurn(prompt string, calls ...string) *Log {
	l.StartTurn(prompt)
	if len(calls) > 0 {
		l.Step("let me check", calls...)
	}
	return l.Step("done: " + prompt).EndTurn()
}

// EventOpts are the go-cmp options for comparing events that went through
// a store: empty and nil slices and maps are equal, byte slices compare
// as a whole (fast for megabyte payloads), times compare with Equal.
var EventOpts = cmp.Options{
	cmp.FilterValues(bothEmpty, cmp.Comparer(func(_, _ any) bool { return true })),
	cmp.Comparer(func(a, b []byte) bool { return bytes.Equal(a, b) }),
}

// bothEmpty reports whether x and y are empty slices or maps, other than
// byte slices, which have their own comparer.
func bothEmpty(x, y any) bool {
	vx, vy := reflect.ValueOf(x), reflect.ValueOf(y)
	if vx.Type() != vy.Type() {
		return false
	}
	switch vx.Kind() {
	case reflect.Slice:
		if vx.Type().Elem().Kind() == reflect.Uint8 {
			return false
		}
	case reflect.Map:
	default:
		return false
	}
	return vx.Len() == 0 && vy.Len() == 0
}

// DiffEvents returns a (-want +got) diff of two event lists.
func DiffEvents(want, got []session.Event) string {
	return cmp.Diff(want, got, EventOpts)
}

// ReadAll reads every event of id after afterSeq.
func ReadAll(ctx context.Context, st session.Store, id session.ID, afterSeq int64) ([]session.Event, error) {
	return session.Collect(st.Events(ctx, id, afterSeq))
}

func mustCreate(t *testing.T, st session.Store, req *session.CreateRequest) session.ID {
	t.Helper()
	id, err := st.Create(context.Background(), req)
	if err != nil {
		t.Fatalf("Create(%+v): %v", req, err)
	}
	return id
}

func mustAppend(t *testing.T, st session.Store, id session.ID, events ...session.Event) {
	t.Helper()
	if err := st.Append(context.Background(), id, events...); err != nil {
		t.Fatalf("Append(%s, %d events from seq %d): %v", id, len(events), firstSeq(events), err)
	}
}

func firstSeq(events []session.Event) int64 {
	if len(events) == 0 {
		return 0
	}
	return events[0].Seq
}

func mustRead(t *testing.T, st session.Store, id session.ID, afterSeq int64) []session.Event {
	t.Helper()
	events, err := ReadAll(context.Background(), st, id, afterSeq)
	if err != nil {
		t.Fatalf("Events(%s, %d): %v", id, afterSeq, err)
	}
	return events
}

func mustInfo(t *testing.T, st session.Store, id session.ID) *session.Info {
	t.Helper()
	info, err := st.Info(context.Background(), id)
	if err != nil {
		t.Fatalf("Info(%s): %v", id, err)
	}
	return info
}

// RunStoreTests runs the conformance suite against the stores newStore
// makes: a fresh, empty store per subtest, and reopen, which closes that
// store and opens it again on the same data (a store without durable data,
// such as MemStore, returns the same store). The suite closes what it
// opens through t.Cleanup.
func RunStoreTests(t *testing.T, newStore func(t *testing.T) (st session.Store, reopen func() session.Store)) {
	open := func(t *testing.T) (session.Store, func() session.Store) {
		st, reopen := newStore(t)
		cur := st
		t.Cleanup(func() { cur.Close() })
		return st, func() session.Store {
			cur = reopen()
			return cur
		}
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, st session.Store, reopen func() session.Store)
	}{
		{"CreateInfo", testCreateInfo},
		{"CreateInvalidID", testCreateInvalidID},
		{"List", testList},
		{"Metadata", testMetadata},
		{"Delete", testDelete},
		{"NotFound", testNotFound},
		{"AppendOrder", testAppendOrder},
		{"AppendStampsSession", testAppendStampsSession},
		{"SeqConflict", testSeqConflict},
		{"AfterSeq", testAfterSeq},
		{"ConcurrentSessions", testConcurrentSessions},
		{"ConcurrentReaders", testConcurrentReaders},
		{"Reopen", testReopen},
		{"Fork", testFork},
		{"Follow", testFollow},
		{"LargePayload", testLargePayload},
		{"Unicode", testUnicode},
		{"UnknownTypes", testUnknownTypes},
		{"AllPayloads", testAllPayloads},
		{"DurableTurn", testDurableTurn},
		{"CallerCannotMutate", testCallerCannotMutate},
		{"Close", testClose},
		{"Syncer", testSyncer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, reopen := open(t)
			tt.fn(t, st, reopen)
		})
	}
}

func testCreateInfo(t *testing.T, st session.Store, _ func() session.Store) {
	ctx := context.Background()
	before := time.Now().Add(-time.Second)
	id := mustCreate(t, st, &session.CreateRequest{ID: "s1", WorkDir: "/work/dir", Meta: map[string]string{"title": "first"}})
	if id != "s1" {
		t.Fatalf("Create returned id %q, want s1", id)
	}
	info := mustInfo(t, st, id)
	want := session.Info{ID: "s1", LastSeq: 0, WorkDir: "/work/dir", Meta: map[string]string{"title": "first"}}
	if diff := cmp.Diff(want, *info, cmpopts.IgnoreFields(session.Info{}, "Created", "Updated"), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Info mismatch (-want +got):\n%s", diff)
	}
	if info.Created.Before(before) || info.Created.After(time.Now().Add(time.Second)) {
		t.Errorf("Info.Created = %v, want about now", info.Created)
	}
	if _, err := st.Create(ctx, &session.CreateRequest{ID: "s1"}); !errors.Is(err, session.ErrExists) {
		t.Errorf("Create of an existing id: err = %v, want ErrExists", err)
	}
	gen, err := st.Create(ctx, nil)
	if err != nil {
		t.Fatalf("Create(nil): %v", err)
	}
	if gen == "" || gen == id {
		t.Errorf("Create(nil) id = %q, want a new non-empty id", gen)
	}
	if err := session.CheckID(gen); err != nil {
		t.Errorf("generated id: %v", err)
	}
	gen2 := mustCreate(t, st, &session.CreateRequest{})
	if gen2 == gen {
		t.Errorf("two generated ids are both %q", gen)
	}
	parent := mustCreate(t, st, &session.CreateRequest{ID: "child", Parent: "s1"})
	if got := mustInfo(t, st, parent).Parent; got != "s1" {
		t.Errorf("Info.Parent = %q, want s1", got)
	}
}

func testCreateInvalidID(t *testing.T, st session.Store, _ func() session.Store) {
	for _, id := range []session.ID{"../escape", "a/b", `a\b`, ".hidden", "with space", session.ID(strings.Repeat("x", 200))} {
		if _, err := st.Create(context.Background(), &session.CreateRequest{ID: id}); err == nil {
			t.Errorf("Create(%q) succeeded; want an error for an id unsafe as a file name", id)
		}
	}
}

func testList(t *testing.T, st session.Store, _ func() session.Store) {
	ids := []session.ID{"a", "b", "c"}
	for i, id := range ids {
		mustCreate(t, st, &session.CreateRequest{ID: id})
		l := NewLog(id)
		for range i + 1 {
			l.FullTurn("hi")
		}
		mustAppend(t, st, id, l.Events...)
	}
	infos, err := st.List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	got := map[session.ID]int64{}
	for _, info := range infos {
		got[info.ID] = info.LastSeq
	}
	want := map[session.ID]int64{}
	for i, id := range ids {
		l := NewLog(id)
		for range i + 1 {
			l.FullTurn("hi")
		}
		want[id] = int64(len(l.Events))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("List LastSeq by id mismatch (-want +got):\n%s", diff)
	}
}

func testMetadata(t *testing.T, st session.Store, reopen func() session.Store) {
	ctx := context.Background()
	id := mustCreate(t, st, &session.CreateRequest{ID: "m", Meta: map[string]string{"a": "1"}})
	for _, kv := range [][2]string{{"title", "Fix the parser"}, {"a", "2"}, {"model", "claude"}} {
		if err := st.SetMeta(ctx, id, kv[0], kv[1]); err != nil {
			t.Fatalf("SetMeta(%q, %q): %v", kv[0], kv[1], err)
		}
	}
	want := map[string]string{"a": "2", "title": "Fix the parser", "model": "claude"}
	if diff := cmp.Diff(want, mustInfo(t, st, id).Meta); diff != "" {
		t.Errorf("Meta mismatch (-want +got):\n%s", diff)
	}
	// Changing the returned map changes nothing stored.
	mustInfo(t, st, id).Meta["a"] = "changed"
	st = reopen()
	if diff := cmp.Diff(want, mustInfo(t, st, id).Meta); diff != "" {
		t.Errorf("Meta after reopen mismatch (-want +got):\n%s", diff)
	}
	infos, err := st.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(infos) != 1 {
		t.Fatalf("List returned %d sessions, want 1", len(infos))
	}
	if diff := cmp.Diff(want, infos[0].Meta); diff != "" {
		t.Errorf("List Meta mismatch (-want +got):\n%s", diff)
	}
}

func testDelete(t *testing.T, st session.Store, reopen func() session.Store) {
	ctx := context.Background()
	keep := mustCreate(t, st, &session.CreateRequest{ID: "keep"})
	gone := mustCreate(t, st, &session.CreateRequest{ID: "gone"})
	mustAppend(t, st, gone, NewLog(gone).FullTurn("x").Events...)
	mustAppend(t, st, keep, NewLog(keep).FullTurn("y").Events...)
	if err := st.Delete(ctx, gone); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	check := func(st session.Store) {
		t.Helper()
		if _, err := st.Info(ctx, gone); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("Info after Delete: err = %v, want ErrNotFound", err)
		}
		if _, err := ReadAll(ctx, st, gone, 0); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("Events after Delete: err = %v, want ErrNotFound", err)
		}
		infos, err := st.List(ctx)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		if len(infos) != 1 || infos[0].ID != keep {
			t.Errorf("List after Delete = %v, want only %s", infos, keep)
		}
		if n := len(mustRead(t, st, keep, 0)); n != len(NewLog(keep).FullTurn("y").Events) {
			t.Errorf("the other session has %d events after Delete", n)
		}
	}
	check(st)
	st = reopen()
	check(st)
	if err := st.Delete(ctx, gone); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("second Delete: err = %v, want ErrNotFound", err)
	}
	// The id is free again.
	mustCreate(t, st, &session.CreateRequest{ID: gone})
	if n := len(mustRead(t, st, gone, 0)); n != 0 {
		t.Errorf("recreated session has %d events, want 0", n)
	}
}

func testNotFound(t *testing.T, st session.Store, _ func() session.Store) {
	ctx := context.Background()
	const id = "missing"
	ev := NewLog(id).StartTurn("x").Events
	checks := map[string]error{
		"Append":  st.Append(ctx, id, ev...),
		"SetMeta": st.SetMeta(ctx, id, "k", "v"),
		"Delete":  st.Delete(ctx, id),
	}
	_, checks["Info"] = st.Info(ctx, id)
	_, checks["Events"] = ReadAll(ctx, st, id, 0)
	for op, err := range checks {
		if !errors.Is(err, session.ErrNotFound) {
			t.Errorf("%s of a missing session: err = %v, want ErrNotFound", op, err)
		}
	}
	infos, err := st.List(ctx)
	if err != nil || len(infos) != 0 {
		t.Errorf("List = %v, %v; want no sessions (Append must not create one)", infos, err)
	}
}

func testAppendOrder(t *testing.T, st session.Store, _ func() session.Store) {
	id := mustCreate(t, st, &session.CreateRequest{ID: "order"})
	l := NewLog(id).FullTurn("one", "c1", "c2").FullTurn("two", "c3")
	// Append in batches of uneven size, then one by one.
	cut := []int{0, 1, 4, 9, len(l.Events) - 3, len(l.Events)}
	for i := 1; i < len(cut); i++ {
		if i == len(cut)-1 {
			for _, e := range l.Events[cut[i-1]:cut[i]] {
				mustAppend(t, st, id, e)
			}
			continue
		}
		mustAppend(t, st, id, l.Events[cut[i-1]:cut[i]]...)
	}
	mustAppend(t, st, id) // an empty append is a no-op
	got := mustRead(t, st, id, 0)
	if diff := DiffEvents(l.Events, got); diff != "" {
		t.Errorf("Events mismatch (-want +got):\n%s", diff)
	}
	if err := session.Balanced(got); err != nil {
		t.Errorf("read-back log: %v", err)
	}
	info := mustInfo(t, st, id)
	last := l.Events[len(l.Events)-1]
	if info.LastSeq != last.Seq {
		t.Errorf("Info.LastSeq = %d, want %d", info.LastSeq, last.Seq)
	}
	if !info.Updated.Equal(last.Time) {
		t.Errorf("Info.Updated = %v, want the last event's time %v", info.Updated, last.Time)
	}
}

func testAppendStampsSession(t *testing.T, st session.Store, _ func() session.Store) {
	ctx := context.Background()
	id := mustCreate(t, st, &session.CreateRequest{ID: "stamp"})
	l := NewLog("").StartTurn("x")
	mustAppend(t, st, id, l.Events...)
	for _, e := range mustRead(t, st, id, 0) {
		if e.Session != id {
			t.Errorf("event %d read back with session %q, want %q", e.Seq, e.Session, id)
		}
	}
	other := NewLog("other").StartTurn("x").Events
	other[0].Seq, other[1].Seq = 3, 4
	if err := st.Append(ctx, id, other...); err == nil {
		t.Errorf("Append of events naming another session succeeded")
	}
	if n := mustInfo(t, st, id).LastSeq; n != 2 {
		t.Errorf("LastSeq = %d after a rejected append, want 2", n)
	}
	noData := session.Event{Seq: 3, Time: Base, Session: id}
	if err := st.Append(ctx, id, noData); err == nil {
		t.Errorf("Append of an event without payload succeeded")
	}
}

func testSeqConflict(t *testing.T, st session.Store, reopen func() session.Store) {
	ctx := context.Background()
	id := mustCreate(t, st, &session.CreateRequest{ID: "seq"})
	l := NewLog(id).FullTurn("a", "c1")
	n := len(l.Events)
	if err := st.Append(ctx, id, l.Events[1:3]...); !errors.Is(err, session.ErrSeqConflict) {
		t.Errorf("first append starting at seq 2: err = %v, want ErrSeqConflict", err)
	}
	mustAppend(t, st, id, l.Events[:3]...)
	cases := []struct {
		name   string
		events []session.Event
	}{
		{"gap", l.Events[4:6]},
		{"duplicate", l.Events[2:4]},
		{"rewind", l.Events[0:1]},
		{"gap inside the batch", []session.Event{l.Events[3], l.Events[5]}},
		{"repeat inside the batch", []session.Event{l.Events[3], l.Events[3]}},
	}
	for _, c := range cases {
		if err := st.Append(ctx, id, c.events...); !errors.Is(err, session.ErrSeqConflict) {
			t.Errorf("%s: err = %v, want ErrSeqConflict", c.name, err)
		}
	}
	check := func(st session.Store) {
		t.Helper()
		if diff := DiffEvents(l.Events[:3], mustRead(t, st, id, 0)); diff != "" {
			t.Errorf("rejected appends wrote something (-want +got):\n%s", diff)
		}
		if got := mustInfo(t, st, id).LastSeq; got != 3 {
			t.Errorf("LastSeq = %d, want 3", got)
		}
	}
	check(st)
	st = reopen()
	check(st)
	mustAppend(t, st, id, l.Events[3:]...)
	if diff := DiffEvents(l.Events, mustRead(t, st, id, 0)); diff != "" {
		t.Errorf("after the conflicts, the right append (-want +got):\n%s", diff)
	}
	if got := mustInfo(t, st, id).LastSeq; got != int64(n) {
		t.Errorf("LastSeq = %d, want %d", got, n)
	}
}

func testAfterSeq(t *testing.T, st session.Store, _ func() session.Store) {
	id := mustCreate(t, st, &session.CreateRequest{ID: "after"})
	l := NewLog(id).FullTurn("a", "c1").FullTurn("b")
	mustAppend(t, st, id, l.Events...)
	n := int64(len(l.Events))
	for _, after := range []int64{0, 1, 5, n - 1, n, n + 10} {
		want := l.Events[min(after, n):]
		if diff := DiffEvents(want, mustRead(t, st, id, after)); diff != "" {
			t.Errorf("Events(after %d) mismatch (-want +got):\n%s", after, diff)
		}
	}
	// Breaking out of the iteration early is fine, and the store stays usable.
	for e, err := range st.Events(context.Background(), id, 0) {
		if err != nil || e.Seq != 1 {
			t.Fatalf("first event = %d, %v", e.Seq, err)
		}
		break
	}
	mustAppend(t, st, id, NewLog(id).FullTurn("a", "c1").FullTurn("b").FullTurn("c").Events[n:]...)
}

func testConcurrentSessions(t *testing.T, st session.Store, _ func() session.Store) {
	const writers, turns = 6, 8
	var wg sync.WaitGroup
	logs := make([]*Log, writers)
	errs := make(chan error, writers)
	for w := range writers {
		id := session.ID(fmt.Sprintf("w%d", w))
		mustCreate(t, st, &session.CreateRequest{ID: id})
		l := NewLog(id)
		for i := range turns {
			l.FullTurn(fmt.Sprintf("turn %d", i), fmt.Sprintf("call-%d", i))
		}
		logs[w] = l
		wg.Go(func() {
			for _, e := range l.Events {
				if err := st.Append(context.Background(), id, e); err != nil {
					errs <- fmt.Errorf("append %s seq %d: %w", id, e.Seq, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, l := range logs {
		if diff := DiffEvents(l.Events, mustRead(t, st, l.Session, 0)); diff != "" {
			t.Errorf("session %s mismatch (-want +got):\n%s", l.Session, diff)
		}
	}
}

func testConcurrentReaders(t *testing.T, st session.Store, _ func() session.Store) {
	id := mustCreate(t, st, &session.CreateRequest{ID: "rw"})
	l := NewLog(id)
	for i := range 15 {
		l.FullTurn(fmt.Sprintf("turn %d", i), fmt.Sprintf("c%d", i))
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	errs := make(chan error, 8)
	for range 3 {
		wg.Go(func() {
			for {
				events, err := ReadAll(context.Background(), st, id, 0)
				if err != nil {
					errs <- err
					return
				}
				// A reader sees a prefix of the log, whole events only.
				if diff := DiffEvents(l.Events[:len(events)], events); diff != "" {
					errs <- fmt.Errorf("a reader saw a torn log (-want +got):\n%s", diff)
					return
				}
				select {
				case <-done:
					return
				default:
				}
			}
		})
	}
	for i := 0; i < len(l.Events); i += 3 {
		mustAppend(t, st, id, l.Events[i:min(i+3, len(l.Events))]...)
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func testReopen(t *testing.T, st session.Store, reopen func() session.Store) {
	a := mustCreate(t, st, &session.CreateRequest{ID: "ra", WorkDir: "/w", Meta: map[string]string{"k": "v"}})
	b := mustCreate(t, st, &session.CreateRequest{ID: "rb", Parent: "ra"})
	la := NewLog(a).FullTurn("one", "c1", "c2")
	lb := NewLog(b).FullTurn("two")
	mustAppend(t, st, a, la.Events...)
	mustAppend(t, st, b, lb.Events...)
	infoA, infoB := mustInfo(t, st, a), mustInfo(t, st, b)

	st = reopen()
	infoOpts := cmp.Options{cmpopts.EquateEmpty(), cmpopts.EquateApproxTime(time.Millisecond)}
	if diff := cmp.Diff(infoA, mustInfo(t, st, a), infoOpts); diff != "" {
		t.Errorf("Info of %s after reopen (-want +got):\n%s", a, diff)
	}
	if diff := cmp.Diff(infoB, mustInfo(t, st, b), infoOpts); diff != "" {
		t.Errorf("Info of %s after reopen (-want +got):\n%s", b, diff)
	}
	if diff := DiffEvents(la.Events, mustRead(t, st, a, 0)); diff != "" {
		t.Errorf("events of %s after reopen (-want +got):\n%s", a, diff)
	}
	// Seqs continue across reopenings.
	la.FullTurn("three")
	mustAppend(t, st, a, la.Events[infoA.LastSeq:]...)
	st = reopen()
	if diff := DiffEvents(la.Events, mustRead(t, st, a, 0)); diff != "" {
		t.Errorf("events of %s after a second reopen (-want +got):\n%s", a, diff)
	}
	if got := mustInfo(t, st, a).LastSeq; got != int64(len(la.Events)) {
		t.Errorf("LastSeq = %d, want %d", got, len(la.Events))
	}
}

func testFork(t *testing.T, st session.Store, reopen func() session.Store) {
	ctx := context.Background()
	src := mustCreate(t, st, &session.CreateRequest{ID: "src", WorkDir: "/w", Meta: map[string]string{"title": "t"}})
	l := NewLog(src).FullTurn("first", "c1", "c2")
	firstEnd := int64(len(l.Events))
	l.StartTurn("second").OpenStep("working", "c3", "c4", "c5").Result("c3", "r3").Started("c4")
	openAt := int64(len(l.Events))
	l.Result("c4", "r4").Result("c5", "r5").EndStep().EndTurn()
	mustAppend(t, st, src, l.Events...)

	t.Run("at a turn boundary", func(t *testing.T) {
		fid, err := session.Fork(ctx, st, src, firstEnd)
		if err != nil {
			t.Fatalf("Fork: %v", err)
		}
		info := mustInfo(t, st, fid)
		if info.Parent != src || info.WorkDir != "/w" || info.Meta["title"] != "t" {
			t.Errorf("fork Info = %+v, want Parent %s, WorkDir /w, Meta title", info, src)
		}
		got := mustRead(t, st, fid, 0)
		want := make([]session.Event, firstEnd)
		for i, e := range l.Events[:firstEnd] {
			e.Session = fid
			want[i] = e
		}
		if diff := DiffEvents(want, got); diff != "" {
			t.Errorf("forked events (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(session.Derive(l.Events[:firstEnd]), session.Derive(got)); diff != "" {
			t.Errorf("derived messages of the fork (-want +got):\n%s", diff)
		}
	})
	t.Run("inside an open step", func(t *testing.T) {
		fid, err := session.Fork(ctx, st, src, openAt)
		if err != nil {
			t.Fatalf("Fork: %v", err)
		}
		got := mustRead(t, st, fid, 0)
		if err := session.Balanced(got); err != nil {
			t.Errorf("fork is not balanced: %v", err)
		}
		if diff := DiffEvents(l.Events[:openAt], withSession(got[:openAt], src)); diff != "" {
			t.Errorf("forked prefix (-want +got):\n%s", diff)
		}
		var codes []string
		for _, e := range got[openAt:] {
			switch d := e.Data.(type) {
			case *session.ToolResult:
				codes = append(codes, string(d.CallID)+":"+d.Code)
			case *session.TurnEnd:
				codes = append(codes, "turn.end:"+string(d.Reason))
			default:
				codes = append(codes, e.Data.EventType())
			}
		}
		want := []string{"c4:" + session.CodeOutcomeUnknown, "c5:" + session.CodeNotStarted, session.TypeStepEnd, "turn.end:" + string(session.EndInterrupted)}
		if diff := cmp.Diff(want, codes); diff != "" {
			t.Errorf("repair events of the fork (-want +got):\n%s", diff)
		}
	})
	t.Run("survives reopen", func(t *testing.T) {
		fid, err := session.Fork(ctx, st, src, 3)
		if err != nil {
			t.Fatalf("Fork: %v", err)
		}
		want := mustRead(t, st, fid, 0)
		st = reopen() // later subtests use the reopened store
		if diff := DiffEvents(want, mustRead(t, st, fid, 0)); diff != "" {
			t.Errorf("fork after reopen (-want +got):\n%s", diff)
		}
		if got := mustInfo(t, st, fid).Parent; got != src {
			t.Errorf("Parent after reopen = %q, want %s", got, src)
		}
	})
	t.Run("bad seq", func(t *testing.T) {
		if _, err := session.Fork(ctx, st, src, int64(len(l.Events)+1)); err == nil {
			t.Errorf("Fork past the end succeeded")
		}
		if _, err := session.Fork(ctx, st, "nope", 1); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("Fork of a missing session: err = %v, want ErrNotFound", err)
		}
	})
}

func withSession(events []session.Event, id session.ID) []session.Event {
	out := make([]session.Event, len(events))
	for i, e := range events {
		e.Session = id
		out[i] = e
	}
	return out
}

func testFollow(t *testing.T, st session.Store, _ func() session.Store) {
	id := mustCreate(t, st, &session.CreateRequest{ID: "follow"})
	l := NewLog(id).FullTurn("a", "c1").FullTurn("b")
	mustAppend(t, st, id, l.Events[:4]...)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got := make(chan session.Event, len(l.Events))
	done := make(chan error, 1)
	opts := &session.FollowOptions{Interval: 10 * time.Millisecond}
	go func() {
		for e, err := range opts.Follow(ctx, st, id, 2) {
			if err != nil {
				done <- err
				return
			}
			got <- e
		}
		done <- nil
	}()
	var seen []session.Event
	next := func() {
		t.Helper()
		select {
		case e := <-got:
			seen = append(seen, e)
		case err := <-done:
			t.Fatalf("Follow ended early: %v", err)
		case <-ctx.Done():
			t.Fatalf("Follow saw %d events, then nothing", len(seen))
		}
	}
	next()
	next()
	for i := 4; i < len(l.Events); i += 2 {
		mustAppend(t, st, id, l.Events[i:min(i+2, len(l.Events))]...)
		next()
		if i+1 < len(l.Events) {
			next()
		}
	}
	if diff := DiffEvents(l.Events[2:], seen); diff != "" {
		t.Errorf("followed events (-want +got):\n%s", diff)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Follow after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Follow did not end after its context was cancelled")
	}
}

func testLargePayload(t *testing.T, st session.Store, reopen func() session.Store) {
	id := mustCreate(t, st, &session.CreateRequest{ID: "large"})
	big := strings.Repeat("0123456789abcdef\n", 1<<20/17+1)
	l := NewLog(id).StartTurn("read it").OpenStep("", "big", "img").Started("big")
	l.Add(&session.ToolResult{CallID: "big", Name: "read", Parts: []llm.Part{&llm.Text{Text: big}}, Outcome: session.OutcomeExecute})
	l.Add(&session.ToolResult{CallID: "img", Parts: []llm.Part{&llm.Image{MediaType: "image/png", Data: []byte(big[:300000])}}})
	l.EndStep().Step("ok").EndTurn()
	mustAppend(t, st, id, l.Events...)
	if diff := DiffEvents(l.Events, mustRead(t, st, id, 0)); diff != "" {
		t.Errorf("large payload mismatch (-want +got):\n%.2000s", diff)
	}
	st = reopen()
	if diff := DiffEvents(l.Events, mustRead(t, st, id, 0)); diff != "" {
		t.Errorf("large payload after reopen mismatch (-want +got):\n%.2000s", diff)
	}
}

// Awkward is text that stresses every encoder: emoji (with ZWJ and
// skin tone), right-to-left scripts, combining marks, control characters
// other than NUL, JSON and HTML metacharacters, and line separators.
const Awkward = "héllo 👩🏽‍💻 🇺🇦 שלום עולם مرحبا e\u0301 \x01\x1f\t\r\n \"quoted\" \\back\\ <tag> & \u2028\u2029 \uFEFF end"

func testUnicode(t *testing.T, st session.Store, reopen func() session.Store) {
	ctx := context.Background()
	id := mustCreate(t, st, &session.CreateRequest{ID: "unicode", WorkDir: "/tmp/ü 目录", Meta: map[string]string{"title": Awkward}})
	l := NewLog(id)
	l.Turn = "turn-" + session.TurnID("ü")
	l.Add(&session.TurnStart{Trigger: session.TriggerPrompt})
	l.Add(&session.UserMessage{Parts: []llm.Part{&llm.Text{Text: Awkward}}})
	l.Add(&session.StepStart{Step: 1})
	l.Add(&session.AssistantMessage{Parts: []llm.Part{&llm.Reasoning{Text: Awkward, Signature: "sig"}, &llm.Text{Text: Awkward}, &llm.ToolCall{ID: "ç1", Name: "écho", Args: json.RawMessage(`{"s":"👩🏽‍💻"}`)}}})
	l.Add(&session.ToolResult{CallID: "ç1", Name: "écho", Parts: []llm.Part{&llm.Text{Text: Awkward}}})
	l.Add(&session.StepEnd{Step: 1})
	l.Add(&session.TurnEnd{Reason: session.EndError, Message: Awkward})
	l.Events[3].Agent = "agent-ü"
	mustAppend(t, st, id, l.Events...)
	if err := st.SetMeta(ctx, id, "note", Awkward); err != nil {
		t.Fatalf("SetMeta: %v", err)
	}
	check := func(st session.Store) {
		t.Helper()
		if diff := DiffEvents(l.Events, mustRead(t, st, id, 0)); diff != "" {
			t.Errorf("unicode events mismatch (-want +got):\n%s", diff)
		}
		info := mustInfo(t, st, id)
		if info.Meta["title"] != Awkward || info.Meta["note"] != Awkward || info.WorkDir != "/tmp/ü 目录" {
			t.Errorf("unicode Info = %+v", *info)
		}
	}
	check(st)
	check(reopen())
}

func testUnknownTypes(t *testing.T, st session.Store, reopen func() session.Store) {
	id := mustCreate(t, st, &session.CreateRequest{ID: "unknown"})
	l := NewLog(id).StartTurn("x")
	raw := json.RawMessage(`{"nested":{"list":[1,2.5,"three",null,true]},"text":"ü"}`)
	l.Add(&session.Unknown{Type: "planner.note", Raw: raw})
	l.Add(&session.Unknown{Type: "future.empty"})
	l.Step("ok").EndTurn()
	mustAppend(t, st, id, l.Events...)
	for pass := range 2 {
		if pass == 1 {
			st = reopen() // read once live, once after reopening
		}
		got := mustRead(t, st, id, 0)
		if diff := DiffEvents(l.Events, got); diff != "" {
			t.Errorf("unknown types mismatch (-want +got):\n%s", diff)
		}
		if u, ok := got[2].Data.(*session.Unknown); !ok || string(u.Raw) != string(raw) {
			t.Errorf("unknown event read back as %#v, want raw %s byte for byte", got[2].Data, raw)
		}
	}
}

// AllPayloads returns one event of every payload type, filled in, forming
// a balanced log of session id.
func AllPayloads(id session.ID) []session.Event {
	l := NewLog(id)
	l.Turn = "t1"
	l.Add(&session.TurnStart{Trigger: session.TriggerPrompt})
	l.Add(&session.PromptBlocked{Reason: "no secrets", Hook: "guard"})
	l.Add(&session.UserMessage{Parts: []llm.Part{&llm.Text{Text: "look", Cache: &llm.CacheHint{TTL: time.Hour}}, &llm.Image{MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}}, &llm.Document{URL: "https://example.com/a.pdf", Title: "A"}}, Source: session.SourceUser})
	l.Add(&session.ContextMessage{Parts: []llm.Part{&llm.Text{Text: "file changed"}}, Source: session.SourceHook})
	l.Add(&session.StepStart{Step: 1})
	l.Add(&session.RequestHeader{Provider: "anthropic", Model: "claude", Sampling: json.RawMessage(`{"temperature":0.5}`), System: []llm.Text{{Text: "be brief"}}, SystemHash: "h1", Tools: []string{"read", "edit"}, ToolsHash: "h2", Reason: "initial"})
	l.Add(&session.Retry{Attempt: 1, Kind: "overloaded", Delay: 2 * time.Second, Error: "529"})
	l.Add(&session.Fallback{FromProvider: "anthropic", FromModel: "claude", ToProvider: "openai", ToModel: "gpt", Reason: "overloaded"})
	l.Add(&session.CacheDrift{Changed: []string{"system"}, Detail: json.RawMessage(`{"sections":[{"index":1}]}`)})
	l.Add(&session.CacheBreak{Cause: "ttl", Read: 0, Expected: 1504, Rebilled: 1881})
	l.Add(&session.MCPEvent{Kind: "mcp:bootstrap:end", Server: "docs", Detail: json.RawMessage(`{"tools":3,"duration_ms":120}`)})
	l.Add(&session.AssistantChunk{Step: 1, Deltas: []session.ChunkDelta{{Index: 0, Kind: "text", Text: "hel"}, {Index: 1, Kind: "tool_call", ID: "k1", Name: "read", Text: `{"p`}}})
	l.Add(&session.AssistantMessage{
		Parts:      []llm.Part{&llm.Reasoning{Text: "hmm", Signature: "sig"}, &llm.Reasoning{Redacted: "opaque"}, &llm.Text{Text: "hello"}, &llm.ToolCall{ID: "k1", Name: "read", Args: json.RawMessage(`{"path":"a.go"}`)}, &llm.ToolCall{ID: "k2", Name: "edit", Args: json.RawMessage(`{}`)}},
		Provenance: &llm.Provenance{Provider: "openai", Model: "gpt", State: json.RawMessage(`{"ids":["r1"]}`)},
		Usage:      llm.Usage{Input: 100, Output: 20, Reasoning: 5, CacheRead: 1000, CacheWrite: 10, CacheWrite5m: 10},
		Finish:     llm.FinishToolCalls,
	})
	l.Add(&session.HookDecision{Point: "tool-gate", Hook: "policy", Decision: "deny", Reason: "no", CallID: "k2", Detail: json.RawMessage(`{"rule":3}`)})
	l.Add(&session.ToolCall{CallID: "k1", Name: "read", Args: json.RawMessage(`{"path":"a.go"}`), Origin: "native", Coerced: []string{"/limit"}})
	l.Add(&session.ToolResult{CallID: "k1", Name: "read", Parts: []llm.Part{&llm.Text{Text: "package a"}, &llm.ToolResult{CallID: "inner", Parts: []llm.Part{&llm.Text{Text: "nested"}}, IsError: true}}, Outcome: session.OutcomeExecute, Duration: 1500 * time.Microsecond})
	l.Add(&session.ToolResult{CallID: "k2", Name: "edit", Parts: []llm.Part{&llm.Text{Text: "Blocked: no"}}, IsError: true, Code: "BLOCKED", Outcome: session.OutcomeGateBlock, Interrupted: false})
	l.Add(&session.TodoWrite{Items: []session.TodoItem{{ID: "1", Content: "read", Status: "completed"}, {Content: "edit", Status: "pending"}}})
	l.Add(&session.SteeringMessage{Parts: []llm.Part{&llm.Text{Text: "also tests"}}, Source: session.SourceSteer})
	l.Add(&session.Repair{Kind: session.RepairOrphanResult, CallID: "zz", Detail: "dropped"})
	l.Add(&session.StepEnd{Step: 1, Usage: llm.Usage{Input: 100, Output: 20}, Finish: llm.FinishToolCalls})
	l.Add(&session.Compaction{Summary: "they looked at a.go", FromSeq: 2, ToSeq: 4, TokensBefore: 5000, TokensAfter: 300})
	l.Add(&session.SessionMeta{Key: "title", Value: "Look"})
	l.Add(&session.Decision{Kind: "choice", Question: "which file next?", Options: []string{"a.go", "b.go"}, Choice: "b.go", Reason: "tests",
		Attempts: 2, Provider: "anthropic", Model: "haiku", Usage: llm.Usage{Input: 40, Output: 9}, Cost: 0.0001, CallID: "k1"})
	l.Add(&session.TurnEnd{Reason: session.EndAborted, Cause: "user", Message: "cancelled", Code: "ABORT"})
	return l.Events
}

func testAllPayloads(t *testing.T, st session.Store, reopen func() session.Store) {
	id := mustCreate(t, st, &session.CreateRequest{ID: "all"})
	events := AllPayloads(id)
	mustAppend(t, st, id, events...)
	for pass := range 2 {
		if pass == 1 {
			st = reopen() // read once live, once after reopening
		}
		if diff := DiffEvents(events, mustRead(t, st, id, 0)); diff != "" {
			t.Errorf("payload round trip (-want +got):\n%s", diff)
		}
	}
}

func testCallerCannotMutate(t *testing.T, st session.Store, _ func() session.Store) {
	id := mustCreate(t, st, &session.CreateRequest{ID: "mut"})
	l := NewLog(id).FullTurn("original", "c1")
	want := NewLog(id).FullTurn("original", "c1").Events
	mustAppend(t, st, id, l.Events...)
	// Change what was passed to Append.
	l.Events[1].Data.(*session.UserMessage).Parts[0].(*llm.Text).Text = "changed"
	l.Events[1].Seq = 99
	// Change what was read.
	got := mustRead(t, st, id, 0)
	got[1].Data.(*session.UserMessage).Parts[0].(*llm.Text).Text = "changed too"
	got[3].Data.(*session.AssistantMessage).Parts[1].(*llm.ToolCall).Args[2] = 'X'
	if diff := DiffEvents(want, mustRead(t, st, id, 0)); diff != "" {
		t.Errorf("stored events changed through caller values (-want +got):\n%s", diff)
	}
}

func testClose(t *testing.T, st session.Store, _ func() session.Store) {
	ctx := context.Background()
	id := mustCreate(t, st, &session.CreateRequest{ID: "closing"})
	if err := st.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Errorf("second Close: %v, want nil (Close is idempotent)", err)
	}
	if err := st.Append(ctx, id, NewLog(id).StartTurn("x").Events...); !errors.Is(err, session.ErrClosed) {
		t.Errorf("Append after Close: err = %v, want ErrClosed", err)
	}
	if _, err := st.Create(ctx, nil); !errors.Is(err, session.ErrClosed) {
		t.Errorf("Create after Close: err = %v, want ErrClosed", err)
	}
	if _, err := ReadAll(ctx, st, id, 0); !errors.Is(err, session.ErrClosed) {
		t.Errorf("Events after Close: err = %v, want ErrClosed", err)
	}
}
