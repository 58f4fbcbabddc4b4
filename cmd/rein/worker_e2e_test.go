package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/reinhq/rein/internal/testwait"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/llm/llmtest"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/session/postgres"
	"github.com/reinhq/rein/session/sqlite"
)

// queueStore is a --store URL on the test server with a schema of t's
// own, whose DBOS schema beside it is dropped too when t ends.
func queueStore(t *testing.T) string {
	t.Helper()
	spec := postgresStore(t, "postgres")
	system := dbosSchema(spec)
	t.Cleanup(func() {
		ctx := context.Background()
		conn, err := pgx.Connect(ctx, os.Getenv("REIN_TEST_POSTGRES"))
		if err != nil {
			t.Errorf("drop schema %s: %v", system, err)
			return
		}
		defer conn.Close(ctx)
		conn.Exec(ctx, `DROP SCHEMA IF EXISTS `+pgx.Identifier{system}.Sanitize()+` CASCADE`)
	})
	return spec
}

// shellTurns is a fake model for queued turns: to the prompt "turn K" it
// answers with a shell call that appends K to ran.txt and then sleeps
// for sleep(K); to that call's result, with "done K".
func shellTurns(sleep func(k int) time.Duration) *llmtest.Model {
	m := llmtest.NewModel()
	respond := llmtest.Respond(func(req *llm.Request) llmtest.Entry {
		last := req.Messages[len(req.Messages)-1]
		for _, p := range last.Parts {
			if r, ok := p.(*llm.ToolResult); ok {
				return llmtest.Reply("done " + strings.TrimPrefix(string(r.CallID), "call-"))
			}
		}
		k, _ := strconv.Atoi(strings.TrimPrefix(lastUserText(req), "turn "))
		cmd := fmt.Sprintf("echo %d >> ran.txt; sleep %.1f", k, sleep(k).Seconds())
		return llmtest.CallTool(fmt.Sprintf("call-%d", k), "shell", fmt.Sprintf(`{"command":%q}`, cmd))
	})
	for range 400 {
		m.Add(respond)
	}
	return m
}

// worker is a running 'rein worker' process.
type worker struct {
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	out  strings.Builder // its stderr so far
}

// stderr is what the worker wrote to stderr so far.
func (w *worker) stderr() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.out.String()
}

// startWorker starts a worker of queue on e.store and waits until it
// runs the queue.
func startWorker(t *testing.T, e *env, queue string) *worker {
	t.Helper()
	cmd := e.cmd(context.Background(), []string{"ANTHROPIC_API_KEY=sk-test-secret-key"}, "worker", "--store", e.store,
		"--queue", queue, "--concurrency", "3", "--takeover-after", "1s", "--takeover-every", "200ms")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &worker{cmd: cmd, done: make(chan struct{})}
	ready := make(chan struct{})
	go func() {
		defer close(w.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			w.mu.Lock()
			w.out.WriteString(sc.Text() + "\n")
			w.mu.Unlock()
			if strings.HasPrefix(sc.Text(), "rein worker: running") {
				close(ready)
			}
		}
		cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-w.done
	})
	select {
	case <-ready:
	case <-w.done:
		t.Fatalf("the worker ended before it ran the queue:\n%s", w.stderr())
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not start in 30s")
	}
	return w
}

// kill ends a worker with SIGKILL: no chance to close anything.
func (w *worker) kill() {
	w.cmd.Process.Kill()
	<-w.done
}

// submit starts 'rein run --queue' for the prompt "turn K" in a new
// session "q-K" and returns the process, its stdout collected.
func submit(t *testing.T, e *env, srv *llmtest.Server, queue string, k int) (*exec.Cmd, *strings.Builder) {
	t.Helper()
	w := wires[0]
	args := w.args(srv, e, "--queue", queue, "--approve", "auto", "--tools", "shell",
		"--new-session", fmt.Sprintf("q-%d", k), fmt.Sprintf("turn %d", k))
	cmd := e.cmd(context.Background(), w.env(), args...)
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	return cmd, &out
}

// workflows lists the turn workflows in e.store's DBOS schema, a line
// each: id, session, status, executor.
func workflows(t *testing.T, e *env) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, os.Getenv("REIN_TEST_POSTGRES"))
	if err != nil {
		return err.Error()
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT workflow_uuid, coalesce(queue_partition_key, ''), status, coalesce(executor_id, '')
		FROM `+pgx.Identifier{dbosSchema(e.store), "workflow_status"}.Sanitize()+` ORDER BY created_at`)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for rows.Next() {
		var id, part, status, exec string
		if err := rows.Scan(&id, &part, &status, &exec); err != nil {
			return err.Error()
		}
		fmt.Fprintf(&b, "%s %s %s %s\n", id, part, status, exec)
	}
	if err := rows.Err(); err != nil {
		return err.Error()
	}
	return b.String()
}

// ranLines counts the lines of ran.txt by their text.
func ranLines(t *testing.T, e *env) map[string]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.work, "ran.txt"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, l := range strings.Fields(string(b)) {
		n[l]++
	}
	return n
}

// readLog reads session id from the store as JSON lines; a session not
// created yet has none.
func readLog(t *testing.T, st session.Store, id session.ID) ([]session.Event, []string) {
	t.Helper()
	var evs []session.Event
	var lines []string
	for ev, err := range st.Events(context.Background(), id, 0) {
		if errors.Is(err, session.ErrNotFound) {
			return nil, nil
		}
		if err != nil {
			t.Fatal(err)
		}
		b, err := session.AppendEventJSON(nil, ev)
		if err != nil {
			t.Fatal(err)
		}
		evs, lines = append(evs, ev), append(lines, string(b))
	}
	return evs, lines
}

// openStore opens e.store as a reader that leaves open turns alone.
func openTestStore(t *testing.T, e *env) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), e.store, &postgres.Options{KeepOpenTurns: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// A turn submitted with 'rein run --queue' runs on a worker and shows on
// the submitter as a local run would, with its exit code.
func TestWorkerRunsQueuedTurn(t *testing.T) {
	e := newEnv(t)
	e.store = queueStore(t)
	srv := llmtest.NewServer(t, shellTurns(func(int) time.Duration { return 0 }))
	startWorker(t, e, "q")
	cmd, out := submit(t, e, srv, "q", 1)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("rein run --queue: %v\n%s", err, cmd.Stderr)
	}
	if got := out.String(); got != "done 1\n" {
		t.Errorf("stdout = %q, want the answer", got)
	}
	if n := ranLines(t, e); n["1"] != 1 {
		t.Errorf("ran.txt = %v, want the command run once", n)
	}
}

// twoWorkersOneCall starts two workers of queue q on e.store and submits
// turn k, whose shell call sleeps long; once the call has started (its
// line in ran.txt), it returns the worker whose lease names the session,
// the submitter and its stdout, and a reader of the store.
func twoWorkersOneCall(t *testing.T, e *env, m *llmtest.Model, k int) (*worker, *exec.Cmd, *strings.Builder, *postgres.Store) {
	t.Helper()
	srv := llmtest.NewServer(t, m)
	workers := map[int]*worker{}
	for range 2 {
		w := startWorker(t, e, "q")
		workers[w.cmd.Process.Pid] = w
	}
	cmd, out := submit(t, e, srv, "q", k)
	st := openTestStore(t, e)
	if !testwait.For(30*time.Second, func() bool { return ranLines(t, e)[strconv.Itoa(k)] == 1 }) {
		t.Fatalf("the shell call never started; stdout %q", out.String())
	}
	l, err := st.Holder(context.Background(), session.ID(fmt.Sprintf("q-%d", k)))
	if err != nil || l == nil || workers[l.PID] == nil {
		t.Fatalf("lease of the running turn = %+v, %v; want one of the workers %v", l, err, workers)
	}
	return workers[l.PID], cmd, out, st
}

// Two workers share a queue; the one running a turn is killed in the
// middle of its shell call; the other finishes the turn. The log is
// balanced, keeps every event it had before the kill unchanged, and the
// shell command (which may not run twice) ran once.
func TestWorkerKilledMidToolOtherFinishes(t *testing.T) {
	e := newEnv(t)
	e.store = queueStore(t)
	m := shellTurns(func(int) time.Duration { return 30 * time.Second })
	w, cmd, out, st := twoWorkersOneCall(t, e, m, 7)
	w.kill()
	_, before := readLog(t, st, "q-7")

	if err := cmd.Wait(); err != nil {
		t.Fatalf("rein run --queue after the kill: %v\n%s", err, cmd.Stderr)
	}
	if got := out.String(); got != "done 7\n" {
		t.Errorf("stdout = %q, want the answer of the resumed turn", got)
	}
	evs, after := readLog(t, st, "q-7")
	if len(after) < len(before) || !slices.Equal(after[:len(before)], before) {
		t.Fatalf("the events on disk before the kill changed:\nbefore %q\nafter  %q", before, after)
	}
	if fix := session.RepairEvents(evs, time.Now()); fix != nil {
		t.Errorf("the log is not balanced: it would need %d repairs:\n%s", len(fix), strings.Join(after, "\n"))
	}
	if n := ranLines(t, e); n["7"] != 1 {
		t.Errorf("ran.txt = %v: the shell command ran %d times, want once", n, n["7"])
	}
	// Two model calls in all: the one that asked for the call is not made
	// again; the resume's tells the model the call was interrupted.
	if reqs := m.Requests(); len(reqs) != 2 || !hasToolResult(reqs[1], "call-7") {
		t.Errorf("%d model requests, want 2 with the call's result in the second", len(reqs))
	}
}

// Twenty turns over three workers, killed at random (each replaced by a
// new one): every turn finishes, every log is balanced and keeps what it
// had on disk at each kill, and no shell command ran twice.
func TestWorkersRandomKills(t *testing.T) {
	e := newEnv(t)
	e.store = queueStore(t)
	const turns, kills = 20, 5
	srv := llmtest.NewServer(t, shellTurns(func(int) time.Duration { return time.Second }))
	var live []*worker
	for range 3 {
		live = append(live, startWorker(t, e, "q"))
	}
	type run struct {
		cmd *exec.Cmd
		out *strings.Builder
	}
	runs := make([]run, turns)
	for k := range turns {
		runs[k].cmd, runs[k].out = submit(t, e, srv, "q", k)
	}
	st := openTestStore(t, e)
	// At each kill, what every log holds: it must still be there at the end.
	snapshots := map[session.ID][][]string{}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 16))
	started := func() (n int) { // shell commands started so far, in any turn
		for _, c := range ranLines(t, e) {
			n += c
		}
		return n
	}
	for range kills {
		// Each kill comes after one or two more commands have started, so
		// it lands in the middle of a tool call, in a turn chosen by the
		// schedule of the day. A command runs at most once per turn, so
		// once every turn's has started (the workers can outrun the kills
		// on a slow host) the remaining kills come at once.
		target := min(started()+1+rng.IntN(2), turns)
		if !testwait.For(60*time.Second, func() bool { return started() >= target }) {
			var logs strings.Builder
			for i, w := range live {
				fmt.Fprintf(&logs, "worker %d:\n%s", i, w.stderr())
			}
			t.Fatalf("no shell command started in 60s (%d started, waiting for %d)\n%s\nturns:\n%s",
				started(), target, &logs, workflows(t, e))
		}
		i := rng.IntN(len(live))
		live[i].kill()
		for k := range turns {
			id := session.ID(fmt.Sprintf("q-%d", k))
			_, lines := readLog(t, st, id)
			snapshots[id] = append(snapshots[id], lines)
		}
		live[i] = startWorker(t, e, "q")
	}
	for k, r := range runs {
		if err := r.cmd.Wait(); err != nil {
			t.Errorf("turn %d: %v\n%s", k, err, r.cmd.Stderr)
		} else if got, want := r.out.String(), fmt.Sprintf("done %d\n", k); got != want {
			t.Errorf("turn %d: stdout = %q, want %q", k, got, want)
		}
	}
	ran := ranLines(t, e)
	resumed := 0
	for k := range turns {
		id := session.ID(fmt.Sprintf("q-%d", k))
		evs, lines := readLog(t, st, id)
		for _, before := range snapshots[id] {
			if len(lines) < len(before) || !slices.Equal(lines[:len(before)], before) {
				t.Errorf("%s: events on disk at a kill changed:\nthen %q\nnow  %q", id, before, lines)
			}
		}
		if fix := session.RepairEvents(evs, time.Now()); fix != nil || len(evs) == 0 {
			t.Errorf("%s is not balanced (or empty):\n%s", id, strings.Join(lines, "\n"))
		}
		for _, ev := range evs {
			if _, ok := ev.Data.(*session.TurnResume); ok {
				resumed++
			}
		}
		if n := ran[strconv.Itoa(k)]; n > 1 {
			t.Errorf("turn %d's shell command ran %d times", k, n)
		}
	}
	t.Logf("%d turns, %d kills, %d resumes", turns, kills, resumed)
}

// A worker stopped with SIGTERM suspends its turn and exits; the other
// worker resumes the turn to its end.
func TestWorkerStoppedHandsTurnOver(t *testing.T) {
	e := newEnv(t)
	e.store = queueStore(t)
	w, cmd, out, st := twoWorkersOneCall(t, e, shellTurns(func(int) time.Duration { return 30 * time.Second }), 3)
	w.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-w.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the worker did not stop within 20s of SIGTERM")
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("rein run --queue after the stop: %v\n%s", err, cmd.Stderr)
	}
	if got := out.String(); got != "done 3\n" {
		t.Errorf("stdout = %q", got)
	}
	evs, lines := readLog(t, st, "q-3")
	var suspended, resumed bool
	for _, ev := range evs {
		switch ev.Data.(type) {
		case *session.TurnSuspend:
			suspended = true
		case *session.TurnResume:
			resumed = true
		}
	}
	if !suspended || !resumed || session.RepairEvents(evs, time.Now()) != nil {
		t.Errorf("want a balanced log with the suspend and the resume:\n%s", strings.Join(lines, "\n"))
	}
	if n := ranLines(t, e); n["3"] != 1 {
		t.Errorf("the shell command ran %d times, want once", n["3"])
	}
}

// Embedded: a worker and 'rein run --queue' on a SQLite store, nothing
// to start.
func TestWorkerEmbeddedSQLite(t *testing.T) {
	e := newEnv(t) // its store is sqlite:…
	srv := llmtest.NewServer(t, shellTurns(func(int) time.Duration { return 0 }))
	startWorker(t, e, "local")
	cmd, out := submit(t, e, srv, "local", 2)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("rein run --queue: %v\n%s", err, cmd.Stderr)
	}
	if got := out.String(); got != "done 2\n" {
		t.Errorf("stdout = %q", got)
	}
}

// A queue needs a store workers share; a worker needs sane limits.
func TestQueueUsageErrors(t *testing.T) {
	e := newEnv(t)
	for _, args := range [][]string{
		{"run", "--store", "mem:", "--queue", "q", "hi"},
		{"worker", "--store", "jsonl:" + e.home},
		{"worker", "--store", e.store, "--concurrency", "0"},
		{"worker", "--store", e.store, "--takeover-after", "1ms"},
	} {
		r := e.run(nil, args...)
		if r.code != 2 || !strings.Contains(r.stderr, "--") {
			t.Errorf("rein %s: exit %d, stderr %q; want a usage error naming the flag", strings.Join(args, " "), r.code, r.stderr)
		}
	}
}

// Embedded, one worker: killed in the middle of a shell call and
// started again, it finishes the turn, the command not run again.
func TestWorkerEmbeddedRestartResumes(t *testing.T) {
	e := newEnv(t)
	srv := llmtest.NewServer(t, shellTurns(func(int) time.Duration { return 30 * time.Second }))
	w := startWorker(t, e, "local")
	cmd, out := submit(t, e, srv, "local", 4)
	if !testwait.For(30*time.Second, func() bool { return ranLines(t, e)["4"] == 1 }) {
		t.Fatalf("the shell call never started; stdout %q", out.String())
	}
	w.kill()
	startWorker(t, e, "local")
	if err := cmd.Wait(); err != nil {
		t.Fatalf("rein run --queue after the restart: %v\n%s", err, cmd.Stderr)
	}
	if got := out.String(); got != "done 4\n" {
		t.Errorf("stdout = %q", got)
	}
	if n := ranLines(t, e); n["4"] != 1 {
		t.Errorf("the shell command ran %d times, want once", n["4"])
	}
}

// With no worker to run it, a queued turn is left when the submitter
// gives up: Ctrl-C exits 130, --timeout 3, both saying where the turn is.
func TestRunQueueGivesUp(t *testing.T) {
	e := newEnv(t)
	srv := llmtest.NewServer(t, shellTurns(func(int) time.Duration { return 0 }))
	w := wires[0]
	r := e.run(w.env(), w.args(srv, e, "--queue", "nobody", "--timeout", "500ms", "hi")...)
	if r.code != 3 || !strings.Contains(r.stderr, "goes on in its worker") {
		t.Errorf("--timeout: exit %d, stderr %q; want 3 and where the turn is", r.code, r.stderr)
	}
	cmd, _ := submit(t, e, srv, "nobody", 5)
	st := sqliteReader(t, e)
	if !testwait.For(30*time.Second, func() bool {
		_, err := st.Info(context.Background(), "q-5")
		return err == nil
	}) {
		t.Fatal("the session was not created")
	}
	cmd.Process.Signal(os.Interrupt)
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("Ctrl-C: %v, want exit 130\n%s", err, cmd.Stderr)
	}
}

// sqliteReader opens e's SQLite store to read.
func sqliteReader(t *testing.T, e *env) session.Store {
	t.Helper()
	st, err := sqlite.Open(strings.TrimPrefix(e.store, "sqlite:"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
