package durable_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/durable"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/sessiontest"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/tooltest"
)

// runDriver drives turns with a real agent on st, answering from m, and
// counts its calls by kind.
type runDriver struct {
	st            session.Store
	m             *llmtest.Model
	runs, resumes int
}

func (d *runDriver) Drive(ctx context.Context, req *durable.DriveRequest) error {
	if req.Resume {
		d.resumes++
		return errors.New("no resume in this driver")
	}
	d.runs++
	a, err := agent.New(&agent.Options{Model: d.m, Store: d.st, Session: req.Turn.Session})
	if err != nil {
		return err
	}
	defer a.Close()
	_, err = a.Run(ctx, &agent.RunRequest{Prompt: req.Turn.Prompt})
	return err
}

func newSession(t *testing.T, st session.Store) session.ID {
	t.Helper()
	id, err := st.Create(context.Background(), &session.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestStepRunsThenOnlyReads(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemStore()
	id := newSession(t, st)
	d := &runDriver{st: st, m: llmtest.NewModel(llmtest.Reply("hello"))}
	turn := &durable.Turn{Session: id, Prompt: "hi"}
	first, err := durable.Step(ctx, st, turn, d)
	if err != nil {
		t.Fatal(err)
	}
	if first.Reason != session.EndCompleted || first.Start != 1 || first.End <= first.Start {
		t.Fatalf("outcome = %+v", first)
	}
	// The engine did not record the step: it runs again, and finds the
	// turn's end on the log without calling the model.
	again, err := durable.Step(ctx, st, turn, d)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(first, again); diff != "" {
		t.Errorf("second execution's outcome (-want +got):\n%s", diff)
	}
	if d.runs != 1 || d.m.Calls() != 1 {
		t.Errorf("runs = %d, model calls = %d; want 1 and 1", d.runs, d.m.Calls())
	}
}

func TestStepFindsOnlyTheTurnAfterItsStart(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemStore()
	id := newSession(t, st)
	d := &runDriver{st: st, m: llmtest.NewModel(llmtest.Reply("one"), llmtest.Reply("two"))}
	first, err := durable.Step(ctx, st, &durable.Turn{Session: id, Prompt: "1"}, d)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	second, err := durable.Step(ctx, st, &durable.Turn{Session: id, Prompt: "2", After: info.LastSeq}, d)
	if err != nil {
		t.Fatal(err)
	}
	if second.Start <= first.End || d.runs != 2 {
		t.Errorf("second turn %+v after first %+v, %d runs", second, first, d.runs)
	}
}

func TestStepResumesAnOpenTurn(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemStore()
	id := newSession(t, st)
	// A turn a dead worker left open: started, never ended.
	if err := st.Append(ctx, id, session.Event{Seq: 1, Session: id, Turn: "t1", Run: "r1", Data: &session.TurnStart{Trigger: session.TriggerPrompt}}); err != nil {
		t.Fatal(err)
	}
	d := &runDriver{st: st}
	_, err := durable.Step(ctx, st, &durable.Turn{Session: id, Prompt: "hi"}, d)
	if err == nil || d.resumes != 1 || d.runs != 0 {
		t.Fatalf("err = %v, resumes = %d, runs = %d; want the driver's error after one resume", err, d.resumes, d.runs)
	}
	o, open, err := durable.Find(ctx, st, &durable.Turn{Session: id})
	if err != nil || !open || o.Start != 1 {
		t.Errorf("Find = %+v, open %v, %v", o, open, err)
	}
}

func TestStepNeedsASession(t *testing.T) {
	_, err := durable.Step(context.Background(), session.NewMemStore(), &durable.Turn{}, &runDriver{})
	if err == nil {
		t.Fatal("a turn without a session ran")
	}
}

// A worker that stops (its ctx done) suspends the run: the turn stays
// open, Step says so, and the next Step resumes it to its end, the
// stopped call answered as interrupted.
func TestRunAgentSuspendsWhenStopped(t *testing.T) {
	st := session.NewMemStore()
	id := newSession(t, st)
	started := make(chan struct{}, 1)
	wait, err := tool.New("wait", "Waits until stopped.", func(ctx context.Context, _ struct{}, _ *tool.Call) (*tool.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := llmtest.NewModel(llmtest.CallTool("c1", "wait", `{}`), llmtest.Reply("after"))
	drive := durable.DriverFunc(func(ctx context.Context, req *durable.DriveRequest) error {
		a, err := agent.New(&agent.Options{Model: m, Tools: []tool.Tool{wait}, Store: st, Session: req.Turn.Session,
			Durable: true, ToolGrace: 50 * time.Millisecond})
		if err != nil {
			return err
		}
		defer a.Close()
		return durable.RunAgent(ctx, a, req, nil)
	})
	ctx, stop := context.WithCancel(context.Background())
	go func() {
		<-started
		stop()
	}()
	turn := &durable.Turn{Session: id, Prompt: "go"}
	if _, err := durable.Step(ctx, st, turn, drive); !errors.Is(err, durable.ErrStillOpen) {
		t.Fatalf("Step of a stopped worker: err = %v, want ErrStillOpen", err)
	}
	o, err := durable.Step(context.Background(), st, turn, drive)
	if err != nil {
		t.Fatal(err)
	}
	if o.Reason != session.EndCompleted || o.Resumed != 1 || m.Calls() != 2 {
		t.Errorf("outcome %+v after %d model calls; want completed, resumed once, 2 calls", o, m.Calls())
	}
}

// A turn a repair closed as interrupted (a store that closes what a dead
// process left open) is resumed in a turn that continues it, whose end is
// the outcome; the call of a tool that may not be re-run stays
// interrupted.
func TestStepContinuesARepairedTurn(t *testing.T) {
	ctx := context.Background()
	st := session.NewMemStore()
	id := newSession(t, st)
	l := sessiontest.NewLog(id).StartTurn("go").OpenStep("working", "c1").Started("c1")
	fix := session.RepairEvents(l.Events, time.Now())
	if err := st.Append(ctx, id, append(l.Events, fix...)...); err != nil {
		t.Fatal(err)
	}
	echo := tooltest.NewRecorder("echo", nil)
	m := llmtest.NewModel(llmtest.Reply("after"))
	drive := durable.DriverFunc(func(ctx context.Context, req *durable.DriveRequest) error {
		a, err := agent.New(&agent.Options{Model: m, Tools: []tool.Tool{echo}, Store: st, Session: id, Durable: true})
		if err != nil {
			return err
		}
		defer a.Close()
		return durable.RunAgent(ctx, a, req, nil)
	})
	o, err := durable.Step(ctx, st, &durable.Turn{Session: id}, drive)
	if err != nil {
		t.Fatal(err)
	}
	if o.Start != 1 || o.Reason != session.EndCompleted || o.Resumed != 1 || len(echo.Calls()) != 0 || m.Calls() != 1 {
		t.Errorf("outcome %+v, %d echo calls, %d model calls; want the continuation completed, echo not run again, one model call",
			o, len(echo.Calls()), m.Calls())
	}
}
