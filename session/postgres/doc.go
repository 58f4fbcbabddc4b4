// Package postgres is a session.Store that keeps sessions in a
// PostgreSQL schema, through github.com/jackc/pgx/v5, so processes on
// many hosts share them.
//
// Quick start:
//
//	st, err := postgres.Open(ctx, "postgres://rein:secret@db.internal:5432/app", nil)
//	if err != nil { ... }
//	defer st.Close()
//	id, err := st.Create(ctx, &session.CreateRequest{WorkDir: wd})
//	err = st.Append(ctx, id, events...)        // one transaction: the commit point
//	for ev, err := range st.Events(ctx, id, 0) { ... }
//	for ev, err := range session.Follow(ctx, st, id, 0) { ... } // woken by NOTIFY
//
// The rein command takes the same URL: rein run --store postgres://… (or
// postgresql://…), on every command.
//
// # Schema
//
// The tables live in one schema: Options.Schema, else the first schema
// of the URL's search_path parameter, else "rein". Open creates the
// schema if it is missing and migrates its tables forward in one
// transaction (one migrator at a time, under an advisory lock); tables a
// newer rein wrote are refused with an error wrapping
// session.ErrUnsupported. They are
//
//	sessions(id, created, updated, last_seq, workdir, parent, meta jsonb)
//	events(session, seq, time, type, turn, run, parent_run, agent, event json)  -- key (session, seq)
//	leases(session, owner, pid, host, space, started, backend, backend_start, since, expires)
//	schema_version(version)
//
// with times in Unix nanoseconds and event the whole event as
// session.Event.MarshalJSON writes it, so a read decodes each event once.
// A partial index on turn.start and turn.end rows finds a turn left open
// without reading the log.
//
// # Appending and durability
//
// Each Append is one statement in one round trip, so one transaction: it
// renews the Store's lease of the session (without the lease nothing is
// written), moves the session's last_seq from the value the Store knows
// (else session.ErrSeqConflict: seqs stay gap-free), inserts the batch
// and queues a NOTIFY for followers. Durability maps to
// synchronous_commit (see Durability); no setting lets a crash of rein
// lose a commit.
//
// # Leases
//
// The first Append of a session in a Store takes the session's lease: a
// row naming the Store (a random token), its process (pid, host, process
// start time, pid space), the server process of the Store's own connection, and an
// expiry, which the Store renews every third of Options.LeaseTTL and on
// every Append. Another Store, in this process or any other, gets a
// *LeaseError (wrapping session.ErrLocked) naming the holder while the
// lease is held. A lease stops being held when
//   - it expires (the holder stalled or lost the server for LeaseTTL),
//   - the holder's own connection is gone (it died, on any host; the
//     server notices the closed connection), or
//   - the holder's process is gone, where this process can see it: same
//     machine boot and pid namespace (known at once; a host name alone is
//     not enough, as containers may share one).
//
// The next Store to append then takes it over; the old holder, if it
// comes back, finds the lease gone in its next Append's transaction and
// gets a *LeaseError with Lost set, having written nothing. Close
// deletes the Store's leases.
//
// # Crash recovery
//
// The first Append, Events or Info of a session in a Store looks at its
// lease. A lease no longer held means its holder died while appending:
// the turns it left open are closed, in one transaction, with the events
// of session.RepairEvents, and the lease is dropped (or taken, for
// Append). A session closed cleanly has no lease, and an open turn of it
// is left for its owner to continue.
//
// # Following
//
// Store implements session.Notifier through LISTEN/NOTIFY on its own
// connection (from its first Subscribe), so session.Follow wakes on
// appends by any process sharing the schema. A connection pooler in
// transaction mode breaks LISTEN and the leases' connection check; use
// session mode or connect directly.
package postgres
