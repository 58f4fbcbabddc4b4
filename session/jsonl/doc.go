// Package jsonl is a session.Store that keeps each session in its own
// JSON Lines file: human-readable, append-only, easy to copy, grep and
// tail.
//
// Quick start:
//
//	st, err := jsonl.Open(filepath.Join(home, ".rein", "sessions"), nil)
//	if err != nil { ... }
//	defer st.Close()
//	id, err := st.Create(ctx, &session.CreateRequest{WorkDir: wd})
//	err = st.Append(ctx, id, events...)        // the commit point
//	for ev, err := range st.Events(ctx, id, 0) { ... }
//
// # Files
//
// Session id lives in <dir>/<id>.jsonl. Its first line is a header,
//
//	{"format":"rein.session","version":1,"id":…,"created":…,"workdir":…,"parent":…,"meta":{…}}
//
// and every further line is one event in the session JSON shape
// (session.Event's MarshalJSON), except that a run of two or more
// consecutive assistant.chunk events of one Append that share their
// turn, run and agent is packed into one line:
//
//	{"pack":N,"seq":S,"time":T,"session":…,"turn":…,"run":…,"type":"assistant.chunk","dt":[0,…],"data":[{…},…]}
//
// holding the events with seqs S … S+N-1, event i at time T plus dt[i]
// nanoseconds with payload data[i]. Reading unpacks them into the
// original events. Metadata set by SetMeta lives in a sidecar,
// <id>.meta.json, replaced atomically, so that it never takes a seq from
// the log; without a sidecar the header's meta is the metadata. List
// reads each file's header and its last line, never a whole log.
//
// # Appending, locking and durability
//
// Each Append is one write of whole lines; if it fails, the file is cut
// back to its size before the write. The first Append of a session takes
// an advisory lock (flock on its file, whose extended attribute
// user.rein.holder names the holder's pid and host), held until Close or
// Delete: another process, or another Store in this one, gets an error
// wrapping session.ErrLocked that names the holder. The lock costs no
// file of its own, except on a file system without user attributes,
// where the record is kept in <id>.lock. Stores of earlier versions
// locked <id>.lock itself: a live process of one holding it holds the
// session, but such a process does not see this lock, so processes of
// both versions should not share a directory at once. Readers take no
// lock. Durability says when appends are fsynced: after a batch holding a
// step.end or turn.end (DurabilityStep, the default), after every batch,
// or never.
//
// Store implements session.Syncer. AppendAsync writes its batch before
// it returns, as Append does, so a crash of the process loses nothing it
// acknowledged; the fsync the durability setting asks for runs on a
// goroutine that exists only while there is something to sync, and one
// fsync covers every write before it. Syncs nobody waits for are at
// least 5 ms apart (steps that come faster share one), so a crash of the
// machine may lose that much more of the finished steps; Sync does not
// wait for the gap. Sync waits for the fsync covering
// every batch that asked for one. A failed fsync is returned by the next
// Sync, Append, AppendAsync or Close of that session and by every later
// one (after a failed fsync the kernel may have dropped the dirty pages,
// so a retry that succeeds proves nothing): reopen the store to check the
// file. Close waits for the syncs in flight.
//
// # Opening a session and crash recovery
//
// The first Append, Events or Info of a session in a Store, if no live
// process holds its lock, checks the file under the lock:
//
//   - a torn final line (no newline, or undecodable) is cut off;
//   - a corrupt line or a seq gap with no turn.end after it is an
//     uncommitted tail and is cut off with everything after it;
//   - a corrupt line or a seq gap before a turn.end is an error wrapping
//     session.ErrCorrupt that names the file and line, and the file is
//     left as it is;
//   - a header of an unknown version is an error wrapping
//     session.ErrUnsupported.
//
// A Store that closes cleanly removes the holder's record; a record
// still there when the lock is taken (on the file, or in an <id>.lock an
// earlier version left) means that process died while appending. Only
// then are the turns it left open closed, with the events of
// session.RepairEvents (results for unanswered calls, step.end,
// turn.end{interrupted}). An open turn of a Store that was closed
// cleanly is left open for its owner to continue. The record is
// written before the holder's first event, and the file's first fsync
// makes it durable with them. A Store opened with
// Options.ReadOnly never locks, cuts or repairs: it reads the committed
// events and skips the rest.
//
// Events reads committed events only, and costs what is new: a Store
// remembers where its last read of a session ended, and a place every
// 16 KiB, so a read after a recent seq starts near it instead of at the
// top of the file. Store implements session.Notifier for its own
// appends, so session.Follow wakes at once; appends by other processes
// are seen by Follow's polling.
package jsonl
