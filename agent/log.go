package agent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// logWriter is the one writer of the agent's session log: it numbers
// events, batches them until a flush, appends each batch in one write,
// folds what was written into the derived history and publishes it to
// the bus. It is safe for concurrent use.
type logWriter struct {
	mu      sync.Mutex
	store   session.Store
	bus     *hook.Bus
	agent   string        // the agent's name on its events
	parent  session.RunID // the parent's run, on a subagent's events
	up      []*hook.Bus   // the ancestors' buses: a subagent's events reach their observers
	now     func() time.Time
	sid     session.ID
	seq     int64
	pending []session.Event
	block   int // the size of the block pending is in, doubled at each new one
	hist    *history
	turns   int      // turns in the session so far, for turn ids
	lastKey string   // the key of the last request header written
	durable bool     // leave a turn a crash left open for Resume
	tail    openTurn // the main agent's open turn
}

// open loads or creates session id (a new one when id is empty) and
// repairs an interrupted tail. Its caller holds no lock.
func (w *logWriter) open(ctx context.Context, id session.ID) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.hist = newHistory()
	w.seq, w.turns, w.lastKey, w.pending, w.tail = 0, 0, "", w.pending[:0], openTurn{}
	if id == "" {
		nid, err := w.store.Create(ctx, &session.CreateRequest{})
		if err != nil {
			return fmt.Errorf("agent: create session: %w", err)
		}
		w.sid = nid
		return nil
	}
	w.sid = id
	if _, err := w.store.Info(ctx, id); errors.Is(err, session.ErrNotFound) {
		if _, err := w.store.Create(ctx, &session.CreateRequest{ID: id}); err != nil {
			return fmt.Errorf("agent: create session %s: %w", id, err)
		}
		return nil
	} else if err != nil {
		return fmt.Errorf("agent: open session %s: %w", id, err)
	}
	events, err := session.Collect(w.store.Events(ctx, id, 0))
	if err != nil {
		return fmt.Errorf("agent: read session %s: %w", id, err)
	}
	w.take(events)
	if w.durable && w.tail.seq > 0 {
		return nil // left for Resume; a Run closes it first
	}
	if err := w.repairLocked(ctx, events); err != nil {
		return fmt.Errorf("agent: repair the interrupted turn of session %s: %w", id, err)
	}
	return nil
}

// repairLocked closes a turn events leave open with recorded repairs.
func (w *logWriter) repairLocked(ctx context.Context, events []session.Event) error {
	fix := session.RepairEvents(events, w.now())
	if len(fix) == 0 {
		return nil
	}
	for i := range fix {
		fix[i].Agent, fix[i].ParentRun = w.agent, w.parent
	}
	if err := w.store.Append(ctx, w.sid, fix...); err != nil {
		return err
	}
	w.take(fix)
	return nil
}

// take folds events already on the log into what the writer tracks.
func (w *logWriter) take(events []session.Event) {
	for i := range events {
		ev := &events[i]
		w.seq = ev.Seq
		w.tail.track(ev)
		switch p := ev.Data.(type) {
		case *session.TurnStart:
			w.turns++
		case *session.RequestHeader:
			w.lastKey = headerKey(p.Provider, p.Model, p.SystemHash, p.ToolsHash, string(p.Sampling))
		}
	}
	w.hist.Add(events...)
}

func headerKey(provider, model, sys, tools, sampling string) string {
	return provider + "\x00" + model + "\x00" + sys + "\x00" + tools + "\x00" + sampling
}

// session returns the session's id.
func (w *logWriter) session() session.ID {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.sid
}

// nextTurn returns the id of a new turn.
func (w *logWriter) nextTurn() session.TurnID {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.turns++
	return session.TurnID("turn-" + itoa(w.turns))
}

// emit queues an event for the next flush.
func (w *logWriter) emit(turn session.TurnID, run session.RunID, p session.Payload) {
	w.mu.Lock()
	w.emitLocked(turn, run, p)
	w.mu.Unlock()
}

func (w *logWriter) emitLocked(turn session.TurnID, run session.RunID, p session.Payload) {
	if len(w.pending) == cap(w.pending) {
		w.grow()
	}
	w.seq++
	w.pending = append(w.pending, session.Event{Seq: w.seq, Time: w.now(), Session: w.sid, Turn: turn, Run: run, ParentRun: w.parent, Agent: w.agent, Data: p})
}

// grow moves what is pending to a new block. Events are queued in blocks
// that are never written again once a flush has handed their events
// over, so the store, the history and the run's Result share them
// without a copy. Each block is twice the last, up to a most: what is
// left of a block when a batch does not fit in it is wasted, and a flush
// leaves pending only a block's unused end, so sizing by that would
// keep blocks small and waste a share of each.
func (w *logWriter) grow() {
	const first, most = 16, 256
	w.block = min(max(2*w.block, first), most)
	n := max(w.block, len(w.pending)+1)
	next := make([]session.Event, len(w.pending), n)
	copy(next, w.pending)
	w.pending = next
}

// flush appends the pending events in one write, then folds them into the
// history and publishes them. ctx should not be cancelled with the run:
// the closing events of a cancelled turn must still be written. It calls
// then, when set, with the events written (never changed afterwards)
// before the lock is released. On failure nothing is kept and seq rolls
// back.
func (w *logWriter) flush(ctx context.Context, then func([]session.Event)) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) == 0 {
		return nil
	}
	batch := w.pending
	if err := w.append(ctx, batch); err != nil {
		w.pending = batch[:0] // nobody kept them
		w.seq = batch[0].Seq - 1
		return fmt.Errorf("agent: append to session %s: %w", w.sid, err)
	}
	// The next events go after these in the same block: what was
	// written is handed over and never changed.
	w.pending = batch[len(batch):]
	w.hist.Add(batch...)
	for i := range batch {
		w.tail.track(&batch[i])
		w.bus.Publish(batch[i])
		for _, b := range w.up {
			b.Publish(batch[i])
		}
	}
	if then != nil {
		then(batch)
	}
	return nil
}

// append hands a batch to the store, without a copy where the store can
// keep it (the writer never changes an event once written), and with its
// sync in the background where the store can do that: the events are
// written when it returns, so a crash of the process loses none, and the
// sync of one step overlaps the model request of the next.
func (w *logWriter) append(ctx context.Context, batch []session.Event) error {
	switch st := w.store.(type) {
	case session.OwnedAppender:
		return st.AppendOwned(ctx, w.sid, batch...)
	case session.Syncer:
		return st.AppendAsync(ctx, w.sid, batch...)
	}
	return w.store.Append(ctx, w.sid, batch...)
}

// sync waits until what was appended is as durable as the store
// promises: before a turn's end is reported, after a record.
func (w *logWriter) sync(ctx context.Context) error {
	st, ok := w.store.(session.Syncer)
	if !ok {
		return nil
	}
	if err := st.Sync(ctx, w.session()); err != nil {
		return fmt.Errorf("agent: sync session %s: %w", w.session(), err)
	}
	return nil
}

// record writes a turn of its own that carries ps (trigger says why) and
// starts no step, so no request is made: injected context, a manual
// compaction.
func (w *logWriter) record(ctx context.Context, trigger string, ps ...session.Payload) error {
	if err := w.closeOpen(ctx); err != nil {
		return err
	}
	turn := w.nextTurn()
	w.mu.Lock()
	w.emitLocked(turn, "", &session.TurnStart{Trigger: trigger})
	for _, p := range ps {
		w.emitLocked(turn, "", p)
	}
	w.emitLocked(turn, "", &session.TurnEnd{Reason: session.EndCompleted})
	w.mu.Unlock()
	if err := w.flush(ctx, nil); err != nil {
		return err
	}
	return w.sync(ctx)
}

// discard drops what is pending and closes an open turn of events (the
// events of a run that panicked) with recorded repairs.
func (w *logWriter) discard(ctx context.Context, events []session.Event) []session.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending = w.pending[:0]
	if n := len(events); n > 0 {
		w.seq = events[n-1].Seq
	}
	fix := session.RepairEvents(events, w.now())
	if len(fix) == 0 || w.store.Append(ctx, w.sid, fix...) != nil {
		return nil
	}
	w.take(fix)
	return fix
}

// header reports whether a request header with key is due: on a turn's
// first step, or when what it names changed since the last one.
func (w *logWriter) header(key string, first bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	changed := key != w.lastKey
	w.lastKey = key
	return first || changed
}

// messages returns the derived history the next request is built from.
func (w *logWriter) messages() []llm.Message {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.hist.Messages()
}

// publish offers a transient event (never written) of the run to the bus.
func (w *logWriter) publish(turn session.TurnID, run session.RunID, p session.Payload) session.Event {
	ev := session.Event{Time: w.now(), Session: w.session(), Turn: turn, Run: run, ParentRun: w.parent, Agent: w.agent, Data: p}
	w.bus.PublishTransient(ev)
	for _, b := range w.up {
		b.PublishTransient(ev)
	}
	return ev
}
