package session_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
)

// richLog is a session with tool calls, steering, context, a compaction
// and an unknown event type.
func richLog(id session.ID) *sessiontest.Log {
	l := sessiontest.NewLog(id).FullTurn("one", "c1", "c2")
	l.StartTurn("two").Add(&session.ContextMessage{Parts: text("ctx"), Source: "hook"})
	l.Add(&session.Unknown{Type: "planner.note", Raw: json.RawMessage(`{"name": "explorer"}`)})
	l.Step("looking", "c3").Add(&session.SteeringMessage{Parts: text("hurry"), Source: session.SourceSteer})
	l.Step("found it", "c4", "c5").Step("done").EndTurn()
	l.StartTurn("three").Add(&session.Compaction{Summary: "turns one and two", FromSeq: 1, ToSeq: int64(len(l.Events))})
	return l.Step("ok", "c6").Step("bye").EndTurn()
}

func TestB51_ExportImport(t *testing.T) {
	ctx := context.Background()
	src := session.NewMemStore()
	id, _ := src.Create(ctx, &session.CreateRequest{ID: "exported"})
	l := richLog(id)
	l.Add(&session.SessionMeta{Key: "title", Value: "first"}).Add(&session.SessionMeta{Key: "title", Value: "second"})
	if err := src.Append(ctx, id, l.Events...); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := session.Export(ctx, src, id, &buf); err != nil {
		t.Fatalf("Export: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(l.Events) {
		t.Fatalf("Export wrote %d lines for %d events", len(lines), len(l.Events))
	}
	for i, line := range lines {
		want, _ := l.Events[i].MarshalJSON()
		if line != string(want) {
			t.Fatalf("line %d = %s, want the codec's %s", i+1, line, want)
		}
	}

	dst := session.NewMemStore()
	got, err := session.Import(ctx, dst, bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	if got != id {
		t.Errorf("Import id = %q, want %q", got, id)
	}
	events, _ := sessiontest.ReadAll(ctx, dst, got, 0)
	if diff := sessiontest.DiffEvents(l.Events, events); diff != "" {
		t.Errorf("imported events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(session.Derive(l.Events), session.Derive(events)); diff != "" {
		t.Errorf("imported derived messages (-want +got):\n%s", diff)
	}
	if got := mustInfoMeta(t, dst, id); got["title"] != "second" {
		t.Errorf("imported Meta = %v, want title from the last session.meta event", got)
	}
	// A second export is byte-identical.
	var again bytes.Buffer
	if err := session.Export(ctx, dst, got, &again); err != nil {
		t.Fatal(err)
	}
	if again.String() != buf.String() {
		t.Errorf("export of the import differs from the original export")
	}
	// Importing into a store that has the id fails and changes nothing.
	if _, err := session.Import(ctx, dst, bytes.NewReader(buf.Bytes())); !errors.Is(err, session.ErrExists) {
		t.Errorf("second Import: err = %v, want ErrExists", err)
	}
	if n, _ := sessiontest.ReadAll(ctx, dst, got, 0); len(n) != len(l.Events) {
		t.Errorf("a failed Import changed the existing session: %d events", len(n))
	}
}

func TestB52_UnknownTypesSurviveExportImport(t *testing.T) {
	ctx := context.Background()
	raw := `{"seq":3,"time":"2026-01-01T00:00:00Z","session":"u","turn":"t1","run":"r","type":"approval.request","data":{"tool": "shell",  "why":["a",1]}}`
	input := `{"seq":1,"time":"2026-01-01T00:00:00Z","session":"u","turn":"t1","run":"r","type":"turn.start","data":{"trigger":"prompt"}}
{"seq":2,"time":"2026-01-01T00:00:00Z","session":"u","turn":"t1","run":"r","type":"user.message","data":{"parts":[{"type":"text","text":"hi"}]}}
` + raw + `
{"seq":4,"time":"2026-01-01T00:00:00Z","session":"u","turn":"t1","run":"r","type":"turn.end","data":{"reason":"completed"}}
`
	st := session.NewMemStore()
	id, err := session.Import(ctx, st, strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := session.Export(ctx, st, id, &out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(input, out.String()); diff != "" {
		t.Errorf("export after import (-want +got):\n%s", diff)
	}
}

func TestImportErrors(t *testing.T) {
	good := func(seq int, session string) string {
		return `{"seq":` + string(rune('0'+seq)) + `,"time":"2026-01-01T00:00:00Z","session":"` + session + `","turn":"t","run":"r","type":"turn.start","data":{}}`
	}
	tests := []struct {
		name, input, want string
	}{
		{"empty", "", "no events"},
		{"blank lines", "\n\n", "no events"},
		{"corrupt line", good(1, "a") + "\n{\"seq\":2,", "line 2"},
		{"gap", good(1, "a") + "\n" + good(3, "a"), "seq conflict"},
		{"two sessions", good(1, "a") + "\n" + good(2, "b"), "event of session b"},
		{"no session", good(1, ""), "names no session"},
		{"bad id", good(1, "../x"), "invalid id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := session.NewMemStore()
			_, err := session.Import(context.Background(), st, strings.NewReader(tt.input))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Import = %v, want an error containing %q", err, tt.want)
			}
			if infos, _ := st.List(context.Background()); len(infos) != 0 {
				t.Errorf("a failed Import left %d sessions", len(infos))
			}
		})
	}
}

func TestExportMissing(t *testing.T) {
	err := session.Export(context.Background(), session.NewMemStore(), "nope", &bytes.Buffer{})
	if !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Export of a missing session: err = %v, want ErrNotFound", err)
	}
}

func TestB51_ForkDerivesTheSame(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemStore()
	id, _ := st.Create(ctx, &session.CreateRequest{ID: "src"})
	l := richLog(id)
	if err := st.Append(ctx, id, l.Events...); err != nil {
		t.Fatal(err)
	}
	for n := int64(0); n <= int64(len(l.Events)); n++ {
		fid, err := session.Fork(ctx, st, id, n)
		if err != nil {
			t.Fatalf("Fork at %d: %v", n, err)
		}
		events, _ := sessiontest.ReadAll(ctx, st, fid, 0)
		if err := session.Balanced(events); err != nil {
			t.Errorf("fork at %d: %v", n, err)
		}
		want := session.Derive(l.Events[:n])
		got := session.Derive(events)
		if session.RepairEvents(l.Events[:n], time.Now()) == nil {
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("fork at %d derives differently (-want +got):\n%s", n, diff)
			}
			continue
		}
		// A fork inside a turn closes it: the calls left open get Repair's
		// results where the source view has placeholders; all else agrees.
		if len(want) != len(got) {
			t.Errorf("fork at %d derives %d messages, the source %d", n, len(got), len(want))
			continue
		}
		if err := checkPaired(got); err != nil {
			t.Errorf("fork at %d: %v", n, err)
		}
	}
}

// pollingStore hides MemStore's Notifier so Follow must poll.
type pollingStore struct{ session.Store }

func TestFollowPolls(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	mem := session.NewMemStore()
	st := pollingStore{mem}
	if _, ok := session.Store(st).(session.Notifier); ok {
		t.Fatal("pollingStore must not be a Notifier")
	}
	id, _ := st.Create(ctx, nil)
	l := sessiontest.NewLog(id).FullTurn("a", "c1")
	opts := &session.FollowOptions{Interval: 5 * time.Millisecond}
	next, stop := iter.Pull2(opts.Follow(ctx, st, id, 0))
	defer stop()
	for i, e := range l.Events {
		if err := st.Append(ctx, id, e); err != nil {
			t.Fatal(err)
		}
		got, err, ok := next()
		if !ok || err != nil || got.Seq != e.Seq {
			t.Fatalf("event %d: Follow gave seq %d, %v, %v", i, got.Seq, err, ok)
		}
	}
}

func TestFollowEnds(t *testing.T) {
	st := session.NewMemStore()
	id, _ := st.Create(context.Background(), nil)
	_ = st.Append(context.Background(), id, sessiontest.NewLog(id).FullTurn("a").Events...)

	t.Run("when the context is done", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		n := 0
		for _, err := range session.Follow(ctx, st, id, 0) {
			if err != nil {
				t.Fatalf("Follow: %v", err)
			}
			if n++; n == 3 {
				cancel()
			}
		}
		if n < 3 {
			t.Errorf("Follow yielded %d events before ending", n)
		}
	})
	t.Run("when the session is deleted", func(t *testing.T) {
		var last error
		n := 0
		for _, err := range session.Follow(context.Background(), st, id, 0) {
			if err != nil {
				last = err
				continue
			}
			if n++; n == 2 {
				_ = st.Delete(context.Background(), id)
			}
		}
		if !errors.Is(last, session.ErrNotFound) {
			t.Errorf("Follow ended with %v, want ErrNotFound", last)
		}
	})
	t.Run("missing session", func(t *testing.T) {
		for _, err := range session.Follow(context.Background(), st, "missing", 0) {
			if !errors.Is(err, session.ErrNotFound) {
				t.Errorf("Follow of a missing session yielded %v, want ErrNotFound", err)
			}
		}
	})
}

func mustInfoMeta(t *testing.T, st session.Store, id session.ID) map[string]string {
	t.Helper()
	info, err := st.Info(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return info.Meta
}
