package dbos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	transact "github.com/dbos-inc/dbos-transact-golang/dbos"
	_ "github.com/dbos-inc/dbos-transact-golang/dbos/driver/sqlite" // sqlite: URLs

	"github.com/reinhq/rein/durable"
	"github.com/reinhq/rein/session"
)

// Defaults of Options.
const (
	DefaultAppName      = "rein"
	DefaultQueue        = "rein"
	DefaultConcurrency  = 4
	DefaultRecoverEvery = 2 * time.Second
	DefaultRecoverAfter = 10 * time.Second
)

// Version is the application version the engine pins by default: DBOS
// workers run only the turns enqueued under their own version. It names
// the shape of the turn workflow (its steps, in order), not the build of
// rein, so workers of different builds share a queue; it changes when the
// steps change. (DBOS would otherwise hash the binary, and every new
// build would strand the queued turns of the last.) Whether a turn's own
// records fit the agent that resumes it is the agent's check.
const Version = "rein-turn-1"

// workflowName is the turn workflow's registered name, by which clients
// enqueue it.
const workflowName = "rein.turn"

// Options configures an Engine. A nil *Options is the zero value: a
// client that submits turns and waits for them.
type Options struct {
	// AppName owns the workflows and queues in the system database; zero
	// is DefaultAppName.
	AppName string
	// Schema holds DBOS's tables in a Postgres system database; zero is
	// DBOS's own default, "dbos".
	Schema string
	// Version is the application version turns are enqueued and run
	// under; zero is Version.
	Version string
	// ExecutorID names this process in the system database. Zero is the
	// host name and a random suffix on Postgres (each worker is its own
	// executor, so none runs another's turns by mistake), and DBOS's
	// "local" on SQLite (so a restarted embedded worker recovers its own).
	ExecutorID string
	// Logger receives the engine's and DBOS's diagnostics; nil discards.
	Logger *slog.Logger

	// Driver, when set, makes the engine a worker: it runs the turns of
	// Queue, driving each through Driver on Store.
	Driver durable.Driver
	// Store holds the sessions the turns run in; required with Driver.
	// When it is a durable.Holder (session/postgres), a turn whose worker
	// died — its session's lease gone — is taken over by another worker.
	Store session.Store
	// Queue is the queue a worker runs and Submit's default; zero is
	// DefaultQueue.
	Queue string
	// Concurrency caps the turns one worker runs at once; zero is
	// DefaultConcurrency. GlobalConcurrency, when positive, caps the
	// turns all workers of the queue run at once: the valve for a
	// provider's rate limits. Both are the queue's settings in the system
	// database, so the last worker to start sets them for all.
	Concurrency       int
	GlobalConcurrency int
	// RecoverEvery is how often a worker looks for turns whose worker
	// died; RecoverAfter is how long a turn must have been running, with
	// no live lease on its session, before it is taken over. Zero is
	// DefaultRecoverEvery and DefaultRecoverAfter.
	RecoverEvery time.Duration
	RecoverAfter time.Duration
	// PollEvery is how often a worker looks for queued turns when idle;
	// zero is DBOS's default (a second).
	PollEvery time.Duration
}

// Engine is a durable.Engine on DBOS Transact: each turn is a DBOS
// workflow of two steps, "begin" (where the turn starts on the log) and
// "drive" (durable.Step). See the package doc.
type Engine struct {
	opts     Options
	ctx      transact.Context // a worker's launched context, else nil
	client   transact.Client  // ctx, or a client's connection
	executor string

	stop      context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

var _ durable.Engine = (*Engine)(nil)

// Open connects to the DBOS system database at url — postgres://… (a
// server shared by many workers) or sqlite:PATH (embedded: one process,
// nothing to start) — creating its tables if they are missing. With
// opts.Driver set it starts a worker; Close, not the end of ctx, stops
// it.
func Open(ctx context.Context, url string, opts *Options) (*Engine, error) {
	e := &Engine{}
	if opts != nil {
		e.opts = *opts
	}
	if err := e.defaults(url); err != nil {
		return nil, err
	}
	if e.opts.Driver == nil {
		if err := e.connect(ctx, url); err != nil {
			return nil, err
		}
		return e, nil
	}
	if err := e.launch(ctx, url); err != nil {
		return nil, err
	}
	return e, nil
}

// defaults checks the options and fills their zero values.
func (e *Engine) defaults(url string) error {
	o := &e.opts
	if url == "" {
		return errors.New("dbos: no system database: give a postgres://… URL (shared by workers) or sqlite:PATH (embedded)")
	}
	if o.Driver != nil && o.Store == nil {
		return errors.New("dbos: a worker needs the session store its turns run in (Options.Store)")
	}
	if o.Concurrency < 0 || o.GlobalConcurrency < 0 {
		return errors.New("dbos: concurrency must be positive (or zero for the default)")
	}
	if o.AppName == "" {
		o.AppName = DefaultAppName
	}
	if o.Version == "" {
		o.Version = Version
	}
	if o.Queue == "" {
		o.Queue = DefaultQueue
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.RecoverEvery <= 0 {
		o.RecoverEvery = DefaultRecoverEvery
	}
	if o.RecoverAfter <= 0 {
		o.RecoverAfter = DefaultRecoverAfter
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ExecutorID == "" && !strings.HasPrefix(url, "sqlite:") {
		host, _ := os.Hostname()
		var b [4]byte
		rand.Read(b[:])
		o.ExecutorID = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	return nil
}

// connect opens a client. A DBOS client never creates the system
// database's tables, so a turn may be submitted before any worker
// started: when they are missing, a context that is never launched
// creates them first.
func (e *Engine) connect(ctx context.Context, url string) error {
	cfg := transact.ClientConfig{DatabaseURL: url, AppName: e.opts.AppName, DatabaseSchema: e.opts.Schema, Logger: e.opts.Logger}
	c, err := transact.NewClient(context.WithoutCancel(ctx), cfg)
	if err != nil {
		init, ierr := transact.NewContext(context.WithoutCancel(ctx), transact.Config{
			DatabaseURL: url, AppName: e.opts.AppName, DatabaseSchema: e.opts.Schema, Logger: e.opts.Logger,
			ApplicationVersion: e.opts.Version,
		})
		if ierr != nil {
			return fmt.Errorf("dbos: connect to %s: %w", where(url), err)
		}
		transact.Shutdown(init, 5*time.Second)
		c, err = transact.NewClient(context.WithoutCancel(ctx), cfg)
	}
	if err != nil {
		return fmt.Errorf("dbos: connect to %s: %w", where(url), err)
	}
	e.client = c
	return nil
}

// launch starts a worker: the turn workflow, the queue, recovery.
func (e *Engine) launch(ctx context.Context, url string) error {
	// The engine lives until Close, not until ctx: a DBOS context that
	// is cancelled marks its running workflows cancelled for good, where
	// a stopping worker must leave them pending for the next.
	c, err := transact.NewContext(context.WithoutCancel(ctx), transact.Config{
		DatabaseURL: url, AppName: e.opts.AppName, DatabaseSchema: e.opts.Schema, Logger: e.opts.Logger,
		ApplicationVersion: e.opts.Version, ExecutorID: e.opts.ExecutorID,
	})
	if err != nil {
		return fmt.Errorf("dbos: connect to %s: %w", where(url), err)
	}
	transact.RegisterWorkflow(c, e.turn, transact.WithWorkflowName(workflowName))
	qopts := []transact.QueueOption{
		transact.WithWorkerConcurrency(e.opts.Concurrency),
		// One turn of a session at a time, on any worker.
		transact.WithPartitionConcurrency(1),
		transact.WithQueueOnConflict(transact.QueueConflictAlwaysUpdate),
	}
	if e.opts.PollEvery > 0 {
		qopts = append(qopts, transact.WithQueueBasePollingInterval(e.opts.PollEvery))
	}
	if e.opts.GlobalConcurrency > 0 {
		qopts = append(qopts, transact.WithGlobalConcurrency(e.opts.GlobalConcurrency))
	}
	if _, err := transact.RegisterQueue(c, e.opts.Queue, qopts...); err != nil {
		transact.Shutdown(c, 5*time.Second)
		return fmt.Errorf("dbos: register queue %q: %w", e.opts.Queue, err)
	}
	c.ListenQueues(c, e.opts.Queue)
	if err := transact.Launch(c); err != nil {
		transact.Shutdown(c, 5*time.Second)
		return fmt.Errorf("dbos: launch: %w", err)
	}
	e.ctx, e.client, e.executor = c, c, c.GetExecutorID()
	bg, stop := context.WithCancel(context.Background())
	e.stop, e.done = stop, make(chan struct{})
	go e.recoverLoop(bg)
	return nil
}

// where names a system database for messages, without its password.
func where(url string) string {
	if strings.HasPrefix(url, "sqlite:") {
		return url
	}
	url, _, _ = strings.Cut(url, "?") // may hold a password
	if i := strings.LastIndex(url, "@"); i >= 0 {
		return url[i+1:]
	}
	if strings.Contains(url, "://") {
		return url
	}
	return "the Postgres server"
}

// Close stops the worker (the turns it drives stay pending, for Launch
// of the same executor or another worker's recovery to continue) and
// closes the connections. It is idempotent.
func (e *Engine) Close() error {
	e.closeOnce.Do(func() {
		if e.stop != nil {
			e.stop()
			<-e.done
		}
		e.closeErr = transact.Shutdown(e.client, 10*time.Second)
	})
	return e.closeErr
}
