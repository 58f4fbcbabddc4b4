package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/durable"
	"github.com/reinhq/rein/durable/dbos"
	"github.com/reinhq/rein/session"
)

func init() { extraCommands = append(extraCommands, (*app).workerCommand) }

func (a *app) workerCommand() *cobra.Command {
	var (
		queue              string
		concurrency        int
		global             int
		takeover, interval time.Duration
	)
	cmd := &cobra.Command{
		Use:   "worker [flags]",
		Short: "Run the turns submitted to a queue ('rein run --queue'), until stopped",
		Long: `Worker runs the turns 'rein run --queue NAME' submits, many at once, each as a
durable DBOS workflow: a worker that stops or dies leaves its turns open on
the log, and another worker (or this one, restarted) continues them from
their last completed step. A tool call that may not run twice and was cut
short is answered as interrupted, never run again.

Workers share a queue through the store: --store postgres://… for many
workers on many hosts, or sqlite:PATH for one on this machine. Each turn's
agent is built from the flags its 'rein run' gave, with this worker's API
keys and config file. --concurrency and --global-concurrency are the valve
for a provider's rate limits.`,
		Example: `  rein worker --store postgres://rein@db/app --queue agents --concurrency 8
  rein run --store postgres://rein@db/app --queue agents "fix the failing test"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if concurrency < 1 || global < 0 {
				return usageErrorf("--concurrency must be at least 1 and --global-concurrency at least 0 (0: no limit)")
			}
			if takeover < 100*time.Millisecond {
				return usageErrorf("--takeover-after %v is too short; use at least 100ms", takeover)
			}
			return a.work(cmd.Context(), &dbos.Options{Queue: queue, Concurrency: concurrency, GlobalConcurrency: global,
				RecoverAfter: takeover, RecoverEvery: interval})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&queue, "queue", dbos.DefaultQueue, "the queue to run")
	fl.IntVar(&concurrency, "concurrency", dbos.DefaultConcurrency, "turns this worker runs at once (the queue's setting for every worker: the last to start sets it)")
	fl.IntVar(&global, "global-concurrency", 0, "turns all workers of the queue run at once (0: no limit)")
	fl.DurationVar(&takeover, "takeover-after", dbos.DefaultRecoverAfter, "take over a turn whose worker died (its session's lease gone) once it has run this long")
	fl.DurationVar(&interval, "takeover-every", dbos.DefaultRecoverEvery, "how often to look for turns of workers that died")
	return cmd
}

// work runs a worker until ctx is done (a signal).
func (a *app) work(ctx context.Context, opts *dbos.Options) error {
	d, err := a.openDurable("rein worker")
	if err != nil {
		return err
	}
	defer d.raw.Close()
	opts.Schema, opts.Store = d.schema, d.raw
	opts.Driver = a.driver(d.store)
	opts.Logger = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	eng, err := dbos.Open(ctx, d.system, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "rein worker: running queue %s on %s, %d turns at a time; stop with Ctrl-C\n", opts.Queue, a.storeShown(), opts.Concurrency)
	<-ctx.Done()
	fmt.Fprintln(a.stderr, "rein worker: stopping; turns in flight are left for the next worker")
	return eng.Close()
}

// driver builds each queued turn's agent on st and runs or resumes it
// (see durable.RunAgent: a stopping worker suspends its runs).
func (a *app) driver(st session.Store) durable.Driver {
	return durable.DriverFunc(func(ctx context.Context, req *durable.DriveRequest) error {
		var q queuedAgent
		if len(req.Turn.Agent) > 0 {
			if err := json.Unmarshal(req.Turn.Agent, &q); err != nil {
				return fmt.Errorf("the queued turn's settings do not parse (was it submitted by another rein?): %w", err)
			}
		}
		f := q.flags(req.Turn.Session)
		f.store = st
		s, err := a.build(ctx, f, nil, false)
		if err != nil {
			return err
		}
		defer s.Close()
		return durable.RunAgent(ctx, s.agent, req, s.runHooks)
	})
}
