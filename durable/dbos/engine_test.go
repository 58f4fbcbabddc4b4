package dbos_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/durable"
	"github.com/reinhq/rein/durable/dbos"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/postgres"
	"github.com/reinhq/rein/session/sqlite"
)

// envURL names the server the tests use; .ci/run starts one and sets it.
const envURL = "REIN_TEST_POSTGRES"

// pgSchemas returns the test server's URL and two new schema names, one
// for the sessions and one for DBOS, dropped when t ends; it skips t
// without a server.
func pgSchemas(t testing.TB) (url, sessions, system string) {
	t.Helper()
	url = os.Getenv(envURL)
	if url == "" {
		t.Skipf("needs a PostgreSQL server: set %s=postgres://… (.ci/run starts one)", envURL)
	}
	var b [6]byte
	rand.Read(b[:])
	sessions = "test_" + hex.EncodeToString(b[:])
	system = sessions + "_dbos"
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Errorf("drop schemas: %v", err)
			return
		}
		defer conn.Close(ctx)
		for _, s := range []string{sessions, system} {
			if _, err := conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{s}.Sanitize()+` CASCADE`); err != nil {
				t.Errorf("drop schema %s: %v", s, err)
			}
		}
	})
	return url, sessions, system
}

// agentDriver answers every turn with a real agent on st, whose model
// replies with the prompt's text.
func agentDriver(st session.Store, calls *atomic.Int64) durable.Driver {
	return durable.DriverFunc(func(ctx context.Context, req *durable.DriveRequest) error {
		calls.Add(1)
		m := llmtest.NewModel(llmtest.Reply("answer to " + req.Turn.Prompt))
		a, err := agent.New(&agent.Options{Model: m, Store: st, Session: req.Turn.Session, Durable: true})
		if err != nil {
			return err
		}
		defer a.Close()
		return durable.RunAgent(ctx, a, req, nil)
	})
}

// submitAndWait submits a turn for a new session of st through client
// and waits for its outcome.
func submitAndWait(t *testing.T, st session.Store, client *dbos.Engine, queue, prompt string) *durable.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	sid, err := st.Create(ctx, &session.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := client.Submit(ctx, &durable.SubmitRequest{Queue: queue, Turn: durable.Turn{Session: sid, Prompt: prompt}})
	if err != nil {
		t.Fatal(err)
	}
	o, err := client.Wait(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if o.Session != sid || o.Reason != session.EndCompleted {
		t.Fatalf("outcome = %+v, want a completed turn of %s", o, sid)
	}
	return o
}

func TestPostgresWorkerRunsSubmittedTurns(t *testing.T) {
	url, schema, system := pgSchemas(t)
	ctx := context.Background()
	st, err := postgres.Open(ctx, url, &postgres.Options{Schema: schema, KeepOpenTurns: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var calls atomic.Int64
	worker, err := dbos.Open(ctx, url, &dbos.Options{Schema: system, Store: st, Driver: agentDriver(st, &calls), Queue: "q", Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	client, err := dbos.Open(ctx, url, &dbos.Options{Schema: system})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	o := submitAndWait(t, st, client, "q", "one")
	if calls.Load() != 1 {
		t.Errorf("driver called %d times, want 1", calls.Load())
	}
	if l, err := st.Holder(ctx, o.Session); err != nil || l != nil {
		t.Errorf("after the turn the lease is %v (%v); want it released", l, err)
	}
}

func TestEmbeddedWorkerOnSQLite(t *testing.T) {
	ctx := context.Background()
	st, url := embedded(t)
	var calls atomic.Int64
	worker, err := dbos.Open(ctx, url, &dbos.Options{Store: st, Driver: agentDriver(st, &calls)})
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	submitAndWait(t, st, worker, "", "embedded")
	if calls.Load() != 1 {
		t.Errorf("driver called %d times, want 1", calls.Load())
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := dbos.Open(ctx, "", nil); err == nil {
		t.Error("no URL: no error")
	}
	var calls atomic.Int64
	if _, err := dbos.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "x.db"), &dbos.Options{Driver: agentDriver(nil, &calls)}); err == nil {
		t.Error("a worker without a store: no error")
	}
}

// A turn may be submitted before any worker ever started: the worker
// that starts later runs it.
func TestSubmitBeforeAnyWorker(t *testing.T) {
	ctx := context.Background()
	st, url := embedded(t)
	client, err := dbos.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	sid, err := st.Create(ctx, &session.CreateRequest{})
	if err != nil {
		t.Fatal(err)
	}
	id, err := client.Submit(ctx, &durable.SubmitRequest{Turn: durable.Turn{Session: sid, Prompt: "early"}})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	worker, err := dbos.Open(ctx, url, &dbos.Options{Store: st, Driver: agentDriver(st, &calls), PollEvery: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer worker.Close()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if o, err := client.Wait(wctx, id); err != nil || o.Reason != session.EndCompleted {
		t.Fatalf("outcome %+v, %v", o, err)
	}
}

// embedded opens a SQLite session store in a directory of t's own and
// returns it with the URL of a DBOS system database beside it.
func embedded(t testing.TB) (*sqlite.Store, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := sqlite.Open(filepath.Join(dir, "sessions.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, "sqlite:" + filepath.Join(dir, "dbos.db")
}
