package postgres_test

import (
	"context"
	"errors"
	"github.com/reinhq/rein/internal/testwait"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/postgres"
	"github.com/reinhq/rein/session/sessiontest"
)

// TestB70_StalledHolderLosesLease: a live process holding a session
// refuses a second driver; stopped (SIGSTOP) so that it cannot renew, its
// lease expires and the second driver takes the session over, closing
// the turn the holder left open.
func TestB70_StalledHolderLosesLease(t *testing.T) {
	u := schemaURL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st := open(t, u, nil)
	if _, err := st.Create(ctx, &session.CreateRequest{ID: sessiontest.CrashID}); err != nil {
		t.Fatal(err)
	}
	t.Setenv(envLeaseTTL, "600ms")
	cmd, lines := sessiontest.StartChild(t, "hold", u, session.DurabilityStep)
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	var line string
	select {
	case line = <-lines:
	case <-ctx.Done():
		t.Fatal("the child did not take the lease")
	}
	pid, ok := strings.CutPrefix(line, "held ")
	if !ok {
		t.Fatalf("child said %q", line)
	}
	held := sessiontest.NewLog(sessiontest.CrashID).StartTurn("held").OpenStep("working", "c1").Started("c1")
	mine := sessiontest.NewLog(sessiontest.CrashID).StartTurn("held").OpenStep("working", "c1").Started("c1").StartTurn("mine").Events[len(held.Events):]
	err := st.Append(ctx, sessiontest.CrashID, mine...)
	var le *postgres.LeaseError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "pid "+pid) {
		t.Fatalf("Append while a live process holds the lease: err = %v, want a *LeaseError naming pid %s", err, pid)
	}
	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	// Wait, on the server's clock, for the lease to run out.
	expired := testwait.For(time.Until(deadlineOf(ctx)), func() bool {
		var expired bool
		if err := st.Pool().QueryRow(ctx, `SELECT expires < now() FROM leases WHERE session = $1`, string(sessiontest.CrashID)).Scan(&expired); err != nil {
			t.Fatal(err)
		}
		return expired
	})
	if !expired {
		t.Fatal("the stopped holder's lease did not expire")
	}
	got, err := sessiontest.ReadAll(ctx, st, sessiontest.CrashID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := session.Balanced(got); err != nil || len(got) != len(held.Events)+3 {
		t.Fatalf("after the lease expired: %d events (want %d and 3 repairs), %v", len(got), len(held.Events), err)
	}
	l := sessiontest.NewLog(sessiontest.CrashID)
	l.Events = got
	l.StartTurn("mine")
	if err := st.Append(ctx, sessiontest.CrashID, l.Events[len(got):]...); err != nil {
		t.Fatalf("Append after the holder's lease expired: %v", err)
	}
}
