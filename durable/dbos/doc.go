// Package dbos is a durable.Engine on DBOS Transact
// (github.com/dbos-inc/dbos-transact-golang): turns are DBOS workflows on
// a queue, run by workers that share a system database — embedded on
// SQLite (nothing to start, one process) or on a shared PostgreSQL
// server (many workers, many hosts).
//
// Quick start, a worker:
//
//	eng, err := dbos.Open(ctx, "postgres://rein@db/app", &dbos.Options{
//		Store: st, Driver: driver, Queue: "agents", Concurrency: 4,
//	})
//	defer eng.Close()
//
// and a client:
//
//	eng, err := dbos.Open(ctx, "postgres://rein@db/app", nil)
//	id, err := eng.Submit(ctx, &durable.SubmitRequest{Queue: "agents", Turn: durable.Turn{Session: sid, Prompt: "…"}})
//	out, err := eng.Wait(ctx, id)
//
// # The workflow
//
// A turn is a workflow of two steps: "begin" records the session's last
// seq, so every execution finds the same turn on the log; "drive" runs
// durable.Step, which runs, resumes or only reads the turn. DBOS
// checkpoints the steps; the session log checkpoints everything inside
// the turn. The queue runs one turn of a session at a time (the session
// is the partition key), Options.Concurrency per worker and
// Options.GlobalConcurrency in all.
//
// # Versions
//
// DBOS runs a workflow only on executors of the application version it
// was enqueued under, and by default derives that version from the
// binary. The engine pins it instead (Version), so a new build of rein
// picks up the turns an older one left.
//
// # Workers that die
//
// DBOS recovers the pending workflows of an executor when an executor of
// the same id launches again — which a worker that never comes back
// never does. So every worker looks, every Options.RecoverEvery, for
// turns another executor began at least Options.RecoverAfter ago whose
// session lease nobody live holds (the store must be a durable.Holder,
// as session/postgres is), and re-enqueues them; the next execution's
// drive step takes the lease and resumes the turn from the log. On
// SQLite the single embedded worker keeps DBOS's "local" executor id and
// recovers its own turns when it starts again.
package dbos
