// Package sqlite is a session.Store that keeps every session in one
// SQLite database, through modernc.org/sqlite (pure Go, no cgo).
//
// Quick start:
//
//	st, err := sqlite.Open(filepath.Join(home, ".rein", "sessions.db"), nil)
//	if err != nil { ... }
//	defer st.Close()
//	id, err := st.Create(ctx, &session.CreateRequest{WorkDir: wd})
//	err = st.Append(ctx, id, events...)        // one transaction: the commit point
//	for ev, err := range st.Events(ctx, id, 0) { ... }
//
// # Schema
//
// The database runs in WAL mode with foreign keys on and a busy timeout,
// so several processes can share it; reads map the first 256 MiB of the
// database file into memory (PRAGMA mmap_size), which spares a system call
// for each page a long read takes from the file. Its STRICT tables are
//
//	sessions(num, id, created, updated, last_seq, workdir, parent, meta)
//	events(key, seq, time, type, turn, run, parent_run, agent, data)
//	locks(session, owner, pid, host, started, since)
//
// with times in Unix nanoseconds, meta a JSON object and data the
// event's "data" JSON. An event's key is its session's num in the high
// bits and its seq in the low 32 (seq is computed from it): a session's
// events are one range of the table's integer key, and the newest
// session's appends go at its end, where a full leaf is followed by a new
// one rather than shared out with its neighbours: most of its appends
// write one page of the table. A session holds up to 4,294,967,295
// events. A partial index on
// turn.start and turn.end rows finds a turn left open without reading
// the log. The schema version is PRAGMA user_version; Open migrates an
// older database forward in one transaction and refuses a newer one with
// an error wrapping session.ErrUnsupported.
//
// # Appending, locking and durability
//
// Each Append is one transaction that checks the seqs
// (session.ErrSeqConflict) and writes the events; one that ends a turn
// also sets the session's last_seq and updated, which readers take from
// the newest event when it is newer. The first Append of a session
// records a lock row naming the Store's process (pid, host, process
// start time), in the same transaction as its events; another Store, in
// this process or another, gets an error wrapping session.ErrLocked
// naming the holder while that process lives. A lock row whose process
// is gone (checked on the same host by pid and start time) is stale and
// is taken over; a holder on another host is taken to be alive. Close
// deletes the Store's rows. Durability maps to PRAGMA synchronous:
// DurabilityAlways is FULL, DurabilityStep (the default) is NORMAL with
// the write-ahead log synced after batches holding a step.end or
// turn.end, DurabilityNever is OFF. Create and Delete return once their
// commit is synced. A lock row reaches stable storage with the first
// synced commit after it: a crash of the machine that loses it leaves
// the old row, which the next open handles again. An open that repaired
// waits for the sync, so a repair is durable before it is read. Every write runs statements
// prepared once on the Store's write connection (BEGIN IMMEDIATE, one
// insert of an append's rows, the session's update, COMMIT).
//
// Store implements session.Syncer. In WAL mode a commit at NORMAL is in
// the write-ahead log when it returns: a crash of the process loses
// nothing committed, and a crash of the machine may lose only commits
// after the log's last fsync, never consistency (SQLite checks the log's
// frames on recovery). What FULL adds to a commit is an fsync of the log,
// so AppendAsync commits a step's end at NORMAL and a goroutine, running
// only while there is work, fsyncs the log file (opened once); one fsync
// covers every commit before it. Syncs nobody waits for are at least
// 5 ms apart (steps that come faster share one), so a crash of the
// machine may lose that much more of the finished steps; Sync does not
// wait for the gap. Sync waits for the fsync covering every
// commit made so far. A checkpoint syncs the log before it copies it
// into the database, so a log found missing was already durable. This
// needs no second connection and copies nothing (a PRAGMA wal_checkpoint
// on one would also write and sync the database file, and could not
// finish while readers hold old snapshots), and the write connection is
// free for the next step's commit while the fsync runs. A call that
// waits for its sync (Append of a step's end, Create, Delete) runs the
// fsync on its own goroutine when no other is running. A failed fsync
// is kept and returned by every later Sync, Append, AppendAsync and
// Close: reopen the store to check the database.
//
// # Reading
//
// Events reads in one read transaction, on a connection of the pool. A
// long read steps the statement on a goroutine while the caller decodes,
// and one of 8,192 events or more (up to the end of the session's last
// finished turn, as its row records) is cut in two at its middle seq: the
// second half is read and decoded ahead, on another connection, in a
// transaction begun after the first, and what it does not bring is read
// in the first. The Store's writer keeps one connection, so a pool
// limited through DB().SetMaxOpenConns needs two (with one, a read fails
// with an error that says so); a read that finds none to spare for its
// second half reads it itself.
//
// # Crash recovery
//
// The first Append, Events or Info of a session in a Store looks at its
// lock row. A stale row means its holder died while appending: the turns
// it left open are closed, in the same transaction, with the events of
// session.RepairEvents, and the row is dropped (or taken, for Append).
// A session closed cleanly has no row, and an open turn of it is left
// for its owner to continue. Transactions make torn writes impossible.
//
// Store implements session.Notifier for its own appends, so
// session.Follow wakes at once; appends by other processes are seen by
// Follow's polling.
package sqlite
