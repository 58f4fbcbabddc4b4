package session

import (
	"context"
	"errors"
	"iter"
	"time"
)

// Errors callers branch on.
var (
	ErrNotFound    = errors.New("session: not found")
	ErrExists      = errors.New("session: already exists")
	ErrSeqConflict = errors.New("session: seq conflict") // an append's first seq is not last+1
	ErrLocked      = errors.New("session: locked by another process")
	ErrCorrupt     = errors.New("session: corrupt")
	ErrUnsupported = errors.New("session: unsupported format version")
	ErrClosed      = errors.New("session: store closed")
)

// Info describes a session for listings.
type Info struct {
	ID      ID
	Created time.Time
	Updated time.Time // time of the last appended event
	LastSeq int64
	WorkDir string
	Parent  ID // the session this one was forked from
	Meta    map[string]string
}

// CreateRequest describes a new session. A zero ID asks the store to make one.
type CreateRequest struct {
	ID      ID
	WorkDir string
	Parent  ID
	Meta    map[string]string
}

// OwnedAppender is implemented by stores that can keep appended events
// as they are given, without copying them. With AppendOwned the caller
// hands the events over: it never modifies them, nor anything they point
// to, afterwards. Otherwise it is Append. The agent's log writer, which
// never changes an event it wrote, uses it when the store has it.
type OwnedAppender interface {
	AppendOwned(ctx context.Context, id ID, events ...Event) error
}

// Syncer is implemented by durable stores that can take the sync of an
// append off the caller's path. AppendAsync is Append whose forcing to
// stable storage, when the store's Durability calls for it, may finish
// after it returns: the events are written before it returns (a crash of
// the process loses none of them) and synced in the background, in order.
// Sync returns once every event appended to id so far is as durable as
// the Durability setting promises. The agent appends with AppendAsync, so
// the sync of one step overlaps the model request of the next, and calls
// Sync before a turn's end is reported.
type Syncer interface {
	AppendAsync(ctx context.Context, id ID, events ...Event) error
	Sync(ctx context.Context, id ID) error
}

// Store is the seam to where session logs live.
//
// Append is the commit point: once it returns nil, the events survive a
// crash of the process (to the store's durability setting). Events must
// carry consecutive seqs starting at the session's last seq + 1, else
// ErrSeqConflict and nothing is written. Append never rewrites earlier
// events. Events yields the events with seq > afterSeq in order; it may
// run concurrently with Append. A Store is safe for concurrent use; Close
// releases it and any locks it holds.
//
// The details every implementation keeps (session/sessiontest checks
// them): Create rejects ids CheckID rejects and makes one with NewID when
// the request has none; Append validates a batch as CheckAppend does and
// stores events with an empty Session under id; Info.Updated is the Time
// of the last event (Created while there is none); SetMeta with an empty
// value deletes the key; every method of a missing session returns an
// error wrapping ErrNotFound, and of a closed store ErrClosed; Close is
// idempotent. A store that can signal appends implements Notifier.
type Store interface {
	Create(ctx context.Context, req *CreateRequest) (ID, error)
	Append(ctx context.Context, id ID, events ...Event) error
	Events(ctx context.Context, id ID, afterSeq int64) iter.Seq2[Event, error]
	Info(ctx context.Context, id ID) (*Info, error)
	List(ctx context.Context) ([]Info, error)
	SetMeta(ctx context.Context, id ID, key, value string) error
	Delete(ctx context.Context, id ID) error
	Close() error
}
