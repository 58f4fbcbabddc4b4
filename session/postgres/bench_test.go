package postgres_test

import (
	"context"
	"os"
	"testing"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/postgres"
	"github.com/reinhq/rein/session/sessiontest"
)

// BenchmarkAppend appends one event per call, as the loop does, at each
// durability setting, and reports events/s.
func BenchmarkAppend(b *testing.B) {
	for _, d := range []postgres.Durability{postgres.DurabilityAlways, postgres.DurabilityStep, postgres.DurabilityNever} {
		b.Run(d.String(), func(b *testing.B) {
			st := open(b, serverURL(b), &postgres.Options{Durability: d, Schema: testSchema(b)})
			sessiontest.BenchAppend(b, st)
		})
	}
}

const bigSession = 100_000

// BenchmarkOpenRepairDerive opens a store holding a 100,000-event
// session left by a crashed process with an open tail turn and its
// lease, reads it (which repairs it) and derives the model messages from
// it. It reports the table's bytes per event.
func BenchmarkOpenRepairDerive(b *testing.B) {
	ctx := context.Background()
	u, schema := serverURL(b), testSchema(b)
	opts := &postgres.Options{Durability: postgres.DurabilityNever, Schema: schema}
	st, err := postgres.Open(ctx, u, opts)
	if err != nil {
		b.Fatal(err)
	}
	n := sessiontest.FillCrashed(b, st, "big", bigSession)
	st.Close()
	admin := open(b, u, opts)
	var size int64
	if err := admin.Pool().QueryRow(ctx, `VACUUM ANALYZE events`).Scan(); err != nil && err.Error() != "no rows in result set" {
		b.Fatal(err)
	}
	if err := admin.Pool().QueryRow(ctx, `SELECT pg_total_relation_size('events')`).Scan(&size); err != nil {
		b.Fatal(err)
	}
	host, _ := os.Hostname()
	restore := func() {
		// Take back the repair, and leave the lease of a process that is
		// gone, as a crash does.
		for _, q := range []string{
			`DELETE FROM events WHERE session = 'big' AND seq > $1`,
			`UPDATE sessions SET last_seq = $1 WHERE id = 'big'`,
		} {
			if _, err := admin.Pool().Exec(ctx, q, n); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := admin.Pool().Exec(ctx, `INSERT INTO leases (session, owner, pid, host, space, started, backend, since, expires)
			VALUES ('big', 'dead', 4194000, $1, '', 1, 0, now(), now() + interval '1 hour')`, host); err != nil {
			b.Fatal(err)
		}
	}
	sessiontest.BenchOpenRepairDerive(b, "big", n, restore, func() (session.Store, error) { return postgres.Open(ctx, u, opts) })
	b.ReportMetric(float64(size)/float64(n), "B/event")
}

// BenchmarkEventsTail reads the last few events of a long session, as a
// follower does after each append.
func BenchmarkEventsTail(b *testing.B) {
	st := open(b, serverURL(b), &postgres.Options{Durability: postgres.DurabilityNever, Schema: testSchema(b)})
	sessiontest.BenchEventsTail(b, st)
}
