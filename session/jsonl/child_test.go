package jsonl_test

import (
	"context"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/jsonl"
	"github.com/reinhq/rein/session/sessiontest"
)

// fsizeChild caps the size of files the child process may write just
// above the session file's size and appends until an append fails,
// reporting the last seq that worked.
func fsizeChild(ctx context.Context, store session.Store, say func(string, ...any)) error {
	st := store.(*jsonl.Store)
	id := sessiontest.CrashID
	info, err := st.Info(ctx, id)
	if err != nil {
		return err
	}
	fi, err := os.Stat(st.Path(id))
	if err != nil {
		return err
	}
	// Go does not ignore SIGXFSZ by default; ignoring it turns the
	// signal into an EFBIG error from write.
	signal.Ignore(syscall.SIGXFSZ)
	limit := uint64(fi.Size()) + 10000
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: limit, Max: limit}); err != nil {
		return err
	}
	l := sessiontest.NewLog(id)
	l.Events = make([]session.Event, info.LastSeq)
	l.StartTurn("big")
	last := info.LastSeq
	for n := 0; ; n++ {
		l.Add(&session.ContextMessage{Parts: []llm.Part{&llm.Text{Text: strings.Repeat("z", 1500) + strconv.Itoa(n)}}})
		l.Add(&session.ContextMessage{Parts: []llm.Part{&llm.Text{Text: strings.Repeat("y", 1500)}}})
		batch := l.Events[last:]
		if err := st.Append(ctx, id, batch...); err != nil {
			say("failed %d %v", last, err)
			return st.Close()
		}
		last = batch[len(batch)-1].Seq
	}
}
