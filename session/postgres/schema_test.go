package postgres_test

import (
	"context"
	"errors"
	"github.com/reinhq/rein/internal/testwait"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/postgres"
)

// TestOpenConcurrently: processes starting together on an empty schema
// create it once, and all of them open it.
func TestOpenConcurrently(t *testing.T) {
	u, schema := serverURL(t), testSchema(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			st, err := postgres.Open(context.Background(), u, &postgres.Options{Schema: schema})
			if err == nil {
				err = st.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
		}
	}
}

// TestSchemaNewer: tables a newer rein wrote are refused, saying to
// upgrade.
func TestSchemaNewer(t *testing.T) {
	u, schema := serverURL(t), testSchema(t)
	st := open(t, u, &postgres.Options{Schema: schema})
	if _, err := st.Pool().Exec(context.Background(), `UPDATE schema_version SET version = $1`, postgres.SchemaVersion+1); err != nil {
		t.Fatal(err)
	}
	_, err := postgres.Open(context.Background(), u, &postgres.Options{Schema: schema})
	if !errors.Is(err, session.ErrUnsupported) || !strings.Contains(err.Error(), "upgrade rein") {
		t.Fatalf("Open of a newer schema: err = %v, want ErrUnsupported saying to upgrade", err)
	}
}

// TestOpenErrors: bad URLs and options get errors that say what to do
// and never show the password.
func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	for url, want := range map[string]string{
		"postgres://rein:hunter2@localhost:notaport/db":      "postgres://user:password@host:port/database",
		"postgres://rein:hunter2@127.0.0.1:1/db":             "check the URL and that the server runs",
		"postgres://rein@127.0.0.1:1/db?password=hunter2":    "127.0.0.1:1/db",
		"host=127.0.0.1 port=1 user=rein password='hunter2'": "check the URL",
	} {
		_, err := postgres.Open(ctx, url, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q): err = %v, want one saying %q", url, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Open(%q): the error shows the password: %v", url, err)
		}
	}
	if _, err := postgres.Open(ctx, "postgres://127.0.0.1:1/db", &postgres.Options{LeaseTTL: time.Millisecond}); err == nil || !strings.Contains(err.Error(), "at least 100ms") {
		t.Errorf("Open with a 1ms lease: err = %v, want one naming the least TTL", err)
	}
}

// TestCloseLeavesNothing: after Close no goroutine of the Store or its
// pool is left, and its leases are gone.
func TestCloseLeavesNothing(t *testing.T) {
	u := schemaURL(t)
	ctx := context.Background()
	before := runtime.NumGoroutine()
	st, err := postgres.Open(ctx, u, &postgres.Options{LeaseTTL: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(ctx, &session.CreateRequest{ID: "s"}); err != nil {
		t.Fatal(err)
	}
	ch, cancel := st.Subscribe("s")
	if err := st.Append(ctx, "s", openTurn("s").Events...); err != nil {
		t.Fatal(err)
	}
	<-ch
	cancel()
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	var n int
	other := open(t, u, nil)
	if err := other.Pool().QueryRow(ctx, `SELECT count(*) FROM leases`).Scan(&n); err != nil || n != 0 {
		t.Errorf("leases after Close: %d, %v; want none", n, err)
	}
	other.Close()
	if !testwait.For(10*time.Second, func() bool { return runtime.NumGoroutine() <= before }) {
		buf := make([]byte, 1<<16)
		t.Fatalf("%d goroutines after Close, %d before Open:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
	}
}
