package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/session"
)

// channel is the NOTIFY channel of appends; the payload is
// "schema/session", and a session id never holds a '/'.
const channel = "rein_events"

// connect opens the Store's own connection and records its server process.
func (s *Store) connect(ctx context.Context) (*pgx.Conn, error) {
	conn, err := pgx.ConnectConfig(ctx, s.cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: open %s: %w; check the URL and that the server runs", s.where, err)
	}
	var b backend
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid(), (SELECT backend_start FROM pg_stat_activity WHERE pid = pg_backend_pid())`).
		Scan(&b.pid, &b.start); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("postgres: open %s: %w", s.where, err)
	}
	s.ident.Store(&b)
	return conn, nil
}

// Subscribe implements session.Notifier: the channel fires after each
// append to session id by any process sharing the schema, through
// LISTEN/NOTIFY (a Store starts listening at its first Subscribe). If
// the connection drops, notifications are missed until it is back;
// session.Follow's polling covers the gap. After Close the channel
// never fires.
//
// The first Subscribe waits (up to listenWait) until the Store listens,
// so an append committed after Subscribe returns is never missed.
func (s *Store) Subscribe(id session.ID) (<-chan struct{}, func()) {
	s.wantListen()
	ch, cancel := s.subs.Subscribe(id)
	t := time.NewTimer(listenWait)
	defer t.Stop()
	select {
	case <-s.listened:
	case <-s.done:
	case <-t.C:
	}
	return ch, cancel
}

// listenWait bounds how long the first Subscribe waits for LISTEN.
const listenWait = 5 * time.Second

var _ session.Notifier = (*Store)(nil)

// background owns the Store's own connection until ctx ends: it renews
// the leases every third of their TTL, listens for appends once a
// caller subscribes, and reconnects when the connection drops.
func (s *Store) background(ctx context.Context, conn *pgx.Conn) {
	defer close(s.done)
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	every := s.ttl / 3
	next := time.Now().Add(every)
	listening := false
	retry := 50 * time.Millisecond
	for ctx.Err() == nil {
		if conn == nil {
			c, err := s.connect(ctx)
			if err != nil {
				s.log.Warn("postgres: reconnect", "server", s.where, "err", err)
				sleep(ctx, retry)
				retry = min(2*retry, every)
				continue
			}
			conn, listening, retry, next = c, false, 50*time.Millisecond, time.Now()
		}
		err := s.step(ctx, conn, &listening, &next, every)
		if err != nil && ctx.Err() == nil {
			s.log.Warn("postgres: lost the connection for leases and notifications", "server", s.where, "err", err)
			conn.Close(context.Background())
			conn = nil
		}
	}
}

// step renews the leases if it is time, starts listening if asked, and
// waits for a notification, the next renewal or a first subscriber. It
// waits on the connection even before it listens, so a connection that
// drops is seen at once and the leases name a live one again soon.
func (s *Store) step(ctx context.Context, conn *pgx.Conn, listening *bool, next *time.Time, every time.Duration) error {
	if !time.Now().Before(*next) {
		if err := s.renew(ctx, conn); err != nil {
			return err
		}
		*next = time.Now().Add(every)
	}
	if !*listening {
		select {
		case <-s.listen.Done():
			if _, err := conn.Exec(ctx, `LISTEN `+channel); err != nil {
				return err
			}
			*listening = true
			s.listenOnce.Do(func() { close(s.listened) })
		default:
		}
	}
	wait, cancel := context.WithDeadline(ctx, *next)
	defer cancel()
	if !*listening {
		stop := context.AfterFunc(s.listen, cancel)
		defer stop()
	}
	n, err := conn.WaitForNotification(wait)
	if err != nil {
		if wait.Err() != nil {
			return nil // time to renew, a first subscriber, or Close
		}
		return err
	}
	if i := strings.LastIndexByte(n.Payload, '/'); i >= 0 && n.Payload[:i] == s.schema {
		s.subs.Notify(session.ID(n.Payload[i+1:]))
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
