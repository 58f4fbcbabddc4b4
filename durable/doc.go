// Package durable runs turns that outlive their process: a turn is
// handed to an Engine, which runs it on a worker of a queue and, when
// that worker dies, on another — continuing the turn from the session
// log, not starting it again.
//
// Quick start, inside an engine's recorded step:
//
//	out, err := durable.Step(ctx, store, &durable.Turn{Session: id, Prompt: "…"},
//		durable.DriverFunc(func(ctx context.Context, req *durable.DriveRequest) error {
//			if req.Resume {
//				_, err := a.Resume(ctx, &agent.ResumeRequest{})
//				return err
//			}
//			_, err := a.Run(ctx, &agent.RunRequest{Prompt: req.Turn.Prompt})
//			return err
//		}))
//
// The engine itself is behind a seam (Engine); durable/dbos is the first.
//
// # Two records, two grains
//
// The engine records a turn coarsely: it was submitted, it began after
// seq N of its session, it ended with this Outcome. Everything inside
// the turn — each model call, each tool call, each loop decision — is
// already on the session log as it happens, durably, in every store
// (agent.Options.Durable pins the turn and syncs a call's start before a
// tool that may not run twice starts). So a turn is one engine step,
// Step, which reads the log to decide: run the turn, resume it (an open
// turn: agent.Resume skips what finished, re-runs what may be re-run and
// tells the model what was interrupted), or only report it (it ended,
// and the engine did not get to record that). Recording each model call
// as an engine step as well would write every result twice, in two
// databases, and the two could disagree; the log would still be the one
// the agent resumes from.
//
// The loop never imports an engine: an engine needs only Step, a Driver
// the host writes (build the agent, call Run or Resume), and, to take
// over the turns of a worker that died, a store that leases sessions
// (Holder).
//
// # Why DBOS Transact is the default engine
//
// DBOS Transact Go is a library, not a service: a worker is the rein
// process itself, and the queue, the workflow records and the recovery
// live in a database the team already has — a SQLite file embedded (the
// default: nothing to start, one machine), or the Postgres server the
// sessions are on (many workers, many hosts), where its tables sit in a
// schema beside the sessions'. It brings what a turn queue needs and
// rein should not write again: queues with per-worker and global
// concurrency (the valve for a provider's rate limits) and partitions
// (one turn of a session at a time), idempotent submission by id,
// waiting for a result from another process, and re-execution of
// interrupted workflows from their last recorded step.
//
// Temporal, the other serious choice, keeps its history in a cluster of
// its own (a server, its database, its workers' task queues) and replays
// workflow code deterministically from that history. That is more to run
// than a harness should ask of a team with one Postgres, and its replay
// model duplicates the session log. It fits behind the same seam — an
// Engine whose activity calls Step — for teams that run it already.
//
// What DBOS does not do for us: it recovers an executor's pending
// workflows only when an executor of the same id starts again. A worker
// that never comes back is covered by the session lease (session/postgres):
// durable/dbos re-enqueues a turn whose session no live process holds.
package durable
