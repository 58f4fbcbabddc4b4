package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/reinhq/rein/durable"
	"github.com/reinhq/rein/durable/dbos"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/postgres"
	"github.com/reinhq/rein/session/sqlite"
)

// queuedAgent is what a queued turn carries of 'rein run's flags: the
// worker that runs the turn builds its agent from them, with its own
// environment (API keys, config file). Secrets are never in it.
type queuedAgent struct {
	Model    string  `json:"model,omitempty"`
	BaseURL  string  `json:"base_url,omitempty"`
	Cwd      string  `json:"cwd,omitempty"`
	Tools    string  `json:"tools,omitempty"`
	Approve  string  `json:"approve,omitempty"`
	DryRun   bool    `json:"dry_run,omitempty"`
	MaxSteps int     `json:"max_steps,omitempty"`
	MaxCost  float64 `json:"max_cost,omitempty"`
	System   string  `json:"system,omitempty"`
}

func queuedFrom(f *agentFlags, root string) queuedAgent {
	return queuedAgent{Model: f.model, BaseURL: f.baseURL, Cwd: root, Tools: f.tools, Approve: f.approve,
		DryRun: f.dryRun, MaxSteps: f.maxSteps, MaxCost: f.maxCost, System: f.system}
}

// flags are the agent flags of a queued turn, for session id.
func (q queuedAgent) flags(id session.ID) *agentFlags {
	f := &agentFlags{model: q.Model, baseURL: q.BaseURL, cwd: q.Cwd, tools: q.Tools, approve: q.Approve,
		dryRun: q.DryRun, maxSteps: q.MaxSteps, maxCost: q.MaxCost, system: q.System,
		session: string(id), existing: true, durable: true}
	f.net.stall, f.net.connect = defaultStallTimeout, defaultConnectTimeout
	return f
}

// durableStore is the store queued turns run in, and DBOS's system
// database beside it: the same Postgres server (DBOS's tables in a schema
// of their own, named after the store's), or a SQLite file next to the
// store's. Turns a dead process left open stay open for a worker to
// resume.
type durableStore struct {
	raw    session.Store // for leases and reads
	store  session.Store // raw, with secrets scrubbed from what is appended
	system string        // DBOS's URL
	schema string        // DBOS's schema on Postgres
}

func (a *app) openDurable(flag string) (*durableStore, error) {
	spec := a.storeSpecValue()
	kind, arg, _ := strings.Cut(spec, ":")
	d := &durableStore{}
	var err error
	switch kind {
	case "postgres", "postgresql":
		d.system, d.schema = spec, dbosSchema(spec)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		d.raw, err = postgres.Open(ctx, spec, &postgres.Options{KeepOpenTurns: true})
	case "sqlite":
		if arg == "" {
			arg = filepath.Join(stateDir(), "sessions.db")
		}
		d.system = "sqlite:" + strings.TrimSuffix(arg, filepath.Ext(arg)) + ".dbos.db"
		d.raw, err = sqlite.Open(arg, nil)
	default:
		return nil, usageErrorf("%s needs a store workers share: --store postgres://… (many workers) or sqlite:PATH (one), not %s", flag, a.storeShown())
	}
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", a.storeShown(), err)
	}
	if a.secrets == nil {
		a.secrets = newScrubber()
	}
	d.store = a.secrets.scrubbed(d.raw)
	return d, nil
}

// dbosSchema names DBOS's schema after the store's: "dbos" for the
// default, else the store's schema and "_dbos", so that stores in
// different schemas of one database have queues of their own.
func dbosSchema(spec string) string {
	u, err := url.Parse(spec)
	if err != nil {
		return ""
	}
	first, _, _ := strings.Cut(u.Query().Get("search_path"), ",")
	if first = strings.Trim(strings.TrimSpace(first), `"`); first == "" || first == postgres.DefaultSchema {
		return ""
	}
	return first + "_dbos"
}

// runQueued submits a turn to queue and shows it as a local run would,
// following the session on the store, with the same exit codes.
func (a *app) runQueued(ctx context.Context, f *agentFlags, prompt, queue string, jsonOut bool, timeout time.Duration) error {
	d, err := a.openDurable("--queue")
	if err != nil {
		return err
	}
	defer d.raw.Close()
	root, err := workspace(f.cwd)
	if err != nil {
		return err
	}
	sid, _, err := resolveSession(ctx, d.store, f, root)
	if err != nil {
		return err
	}
	info, err := d.store.Info(ctx, sid)
	if err != nil {
		return err
	}
	eng, err := dbos.Open(ctx, d.system, &dbos.Options{Schema: d.schema, Queue: queue})
	if err != nil {
		return err
	}
	defer eng.Close()
	spec, _ := json.Marshal(queuedFrom(f, root))
	id, err := eng.Submit(ctx, &durable.SubmitRequest{Turn: durable.Turn{Session: sid, Prompt: prompt, Agent: spec}})
	if err != nil {
		return err
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var r renderer
	var jr *jsonRenderer
	if jsonOut {
		jr = &jsonRenderer{w: bufio.NewWriter(a.stdout)}
		r = jr
	} else {
		r = newTextRenderer(a.stdout, a.stderr, a.outTTY)
	}
	end, last, err := follow(ctx, d.store, eng, id, sid, info.LastSeq, r)
	r.flush()
	if jr != nil {
		jr.result(sid, end, err)
	}
	fmt.Fprintf(a.stderr, "session %s\n", sid)
	if err != nil && ctx.Err() != nil {
		code, why := exitCancelled, "stopped following"
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			code, why = exitStopped, "--timeout passed"
		}
		return &codeError{code: code, err: fmt.Errorf("%s; turn %s goes on in its worker (follow it with 'rein sessions tail %s')", why, id, sid)}
	}
	if err := turnExit(end, err); err != nil {
		return err
	}
	return refused(last)
}

// follow renders the events of session sid after seq after until turn
// id has ended and its turn.end was rendered, and returns that end and
// the turn's last assistant message.
func follow(ctx context.Context, st session.Store, eng durable.Engine, id string, sid session.ID, after int64, r renderer) (*session.TurnEnd, *session.AssistantMessage, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		seen    atomic.Int64 // the last seq rendered
		endSeq  atomic.Int64 // the turn's end, once known
		waitErr = make(chan error, 1)
	)
	seen.Store(after)
	go func() {
		o, err := eng.Wait(ctx, id)
		if err != nil {
			waitErr <- err
			cancel()
			return
		}
		endSeq.Store(o.End)
		waitErr <- nil
		if seen.Load() >= o.End {
			cancel()
		}
	}()
	var (
		end  *session.TurnEnd
		last *session.AssistantMessage
	)
	for ev, err := range session.Follow(ctx, st, sid, after) {
		if err != nil {
			break
		}
		r.event(ev)
		if ev.ParentRun == "" {
			switch p := ev.Data.(type) {
			case *session.TurnEnd:
				end = p
			case *session.AssistantMessage:
				last = p
			}
		}
		seen.Store(ev.Seq)
		if e := endSeq.Load(); e > 0 && ev.Seq >= e {
			break
		}
	}
	cancel()
	if err := <-waitErr; err != nil {
		return end, last, err
	}
	return end, last, nil
}
