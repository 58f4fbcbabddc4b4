package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"

	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/reinhq/rein/serve"
	"github.com/reinhq/rein/session"
)

func init() { extraCommands = append(extraCommands, (*app).serveCommand) }

// defaultServeAddr is where 'rein serve' listens without --addr.
const defaultServeAddr = "127.0.0.1:7420"

const serveLong = `Serve runs agents behind an HTTP API and a web page. Sessions live in the
store named by --store; the model, tools and limits flags are the defaults of
every session, which a client may override when it creates one.

Every API request needs the bearer token: $REIN_SERVE_TOKEN, or one generated
at start and printed once. The server listens on loopback unless --addr says
otherwise, and refuses any other address without $REIN_SERVE_TOKEN. Calls that
need approval (--approve ask, the default) wait for a client's answer.

Open the printed address in a browser for the web page. The API, under /v1:

  POST   /v1/sessions                       {"model","tools","cwd","limits":{"max_steps","max_cost"}}
  GET    /v1/sessions[?limit=N&cursor=C]    newest first, with titles
  GET    /v1/sessions/ID                    state, running turn, calls waiting
  DELETE /v1/sessions/ID
  POST   /v1/sessions/ID/turns              {"prompt": "…"}; 409 while one runs
  POST   /v1/sessions/ID/steer              {"message": "…"}
  POST   /v1/sessions/ID/follow-up          {"message": "…"}
  POST   /v1/sessions/ID/cancel
  POST   /v1/sessions/ID/tools/CALL/cancel
  POST   /v1/sessions/ID/approvals/CALL     {"decision": "allow"|"deny"|"always"}
  GET    /v1/sessions/ID/events             Server-Sent Events, id = seq (Last-Event-ID resumes);
                                            ?format=ndjson&after=SEQ[&follow=1] for NDJSON
  GET    /v1/sessions/ID/export             NDJSON; ?format=markdown for a transcript
  GET    /v1/sessions/ID/summary            the run summary with cost by model`

const serveExample = `  export REIN_SERVE_TOKEN=$(openssl rand -hex 16)
  rein serve --model anthropic/claude-sonnet-4-5 &
  auth="Authorization: Bearer $REIN_SERVE_TOKEN"; api=http://127.0.0.1:7420/v1

  # create a session and start a turn
  id=$(curl -s -H "$auth" -d '{"tools":["read","write"]}' $api/sessions | jq -r .id)
  curl -s -H "$auth" -d '{"prompt":"create hello.txt saying hi"}' $api/sessions/$id/turns

  # stream its events (Ctrl-C, then resume with -H "Last-Event-ID: SEQ")
  curl -sN -H "$auth" $api/sessions/$id/events

  # approve the write the stream shows waiting (an approval.request event)
  curl -s -H "$auth" -d '{"decision":"allow"}' $api/sessions/$id/approvals/CALL_ID`

func (a *app) serveCommand() *cobra.Command {
	f := &agentFlags{}
	var addr string
	var idle time.Duration
	cmd := &cobra.Command{
		Use:     "serve [--addr HOST:PORT]",
		Short:   "Serve agents over an HTTP API with a live web page",
		Long:    serveLong,
		Example: serveExample,
		Args:    exactArgs(0, "no arguments (flags only)"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.session != "" || f.fork != "" {
				return usageErrorf("rein serve has no --session or --fork: clients create sessions with POST /v1/sessions")
			}
			if idle < 0 {
				return usageErrorf("--idle-timeout %s is negative; give how long an idle session keeps its agent, e.g. --idle-timeout 30m", idle)
			}
			if idle == 0 {
				idle = -1 // never
			}
			return a.serve(cmd.Context(), f, addr, idle)
		},
	}
	f.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&addr, "addr", defaultServeAddr, "the address to listen on; beyond loopback only with $REIN_SERVE_TOKEN set")
	fl.DurationVar(&idle, "idle-timeout", 30*time.Minute, "close a session's agent after this long without a turn; it is rebuilt from the store on the next request; 0 keeps agents open")
	fl.Lookup("cwd").Usage = "the workspace root: sessions work inside it (default the current directory)"
	fl.Lookup("approve").Usage = "approval of writes and commands: ask (through the API, the default), auto or deny"
	_ = fl.MarkHidden("session")
	_ = fl.MarkHidden("fork")
	return cmd
}

// serve listens on addr until ctx ends.
func (a *app) serve(ctx context.Context, f *agentFlags, addr string, idle time.Duration) error {
	token := a.getenv("REIN_SERVE_TOKEN")
	if err := checkServeAddr(addr, token != ""); err != nil {
		return err
	}
	root, err := workspace(f.cwd)
	if err != nil {
		return err
	}
	generated := token == ""
	if generated {
		var b [16]byte
		_, _ = rand.Read(b[:])
		token = hex.EncodeToString(b[:])
	}
	st, err := a.openStore()
	if err != nil {
		return err
	}
	defer st.Close()
	srv, err := serve.New(&serve.Options{
		Store: st, Token: token, Root: root,
		NewAgent:    a.serveAgents(f, st),
		Markdown:    func(w io.Writer, events []session.Event) error { writeMarkdown(w, events); return nil },
		Cost:        catalogCost,
		IdleTimeout: idle,
		Logger:      slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usageErrorf("--addr %s: %v; choose a free port, e.g. --addr 127.0.0.1:0", addr, err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	url := "http://" + ln.Addr().String()
	fmt.Fprintf(a.stderr, "rein serve: listening on %s (store %s, workspace %s)\n", url, a.storeSpecValue(), root)
	if generated {
		fmt.Fprintf(a.stderr, "rein serve: token %s (set REIN_SERVE_TOKEN to choose one)\nrein serve: open %s/#token=%s\n", token, url, token)
	} else {
		fmt.Fprintf(a.stderr, "rein serve: token from $REIN_SERVE_TOKEN; open %s/#token=…\n", url)
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	fmt.Fprintln(a.stderr, "rein serve: shutting down")
	// Event streams never end on their own: end the runs and streams
	// first, then let the server drain what is left.
	srv.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	<-errc
	return nil
}

// checkServeAddr refuses to listen beyond loopback without a chosen token.
func checkServeAddr(addr string, haveToken bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErrorf("--addr %q: %v; use HOST:PORT, e.g. %s", addr, err, defaultServeAddr)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	if !haveToken {
		return usageErrorf("--addr %s is reachable from other machines: set REIN_SERVE_TOKEN to a secret of your own first (e.g. export REIN_SERVE_TOKEN=$(openssl rand -hex 16)), or listen on 127.0.0.1", addr)
	}
	return nil
}

// apiWords rewrites the flag names in a configuration error into the
// field names of POST /v1/sessions.
var apiWords = strings.NewReplacer("--model ", `"model" `, "--model", `"model"`, "--tools", `"tools"`)

// serveAgents builds each session's agent as 'rein run' does, from the
// server's flags overridden by what the session was created with.
func (a *app) serveAgents(base *agentFlags, st session.Store) func(context.Context, *serve.SessionRequest) (*serve.Handle, error) {
	return func(ctx context.Context, req *serve.SessionRequest) (*serve.Handle, error) {
		f := *base
		f.session, f.fork, f.cwd, f.store = string(req.Session), "", req.Cwd, st
		if req.Model != "" {
			f.model = req.Model
		}
		if req.Tools != nil {
			f.tools = "none"
			if len(req.Tools) > 0 {
				f.tools = strings.Join(req.Tools, ",")
			}
		}
		if req.MaxSteps > 0 {
			f.maxSteps = req.MaxSteps
		}
		if req.MaxCost > 0 {
			f.maxCost = req.MaxCost
		}
		if f.approve == "" && a.getenv("REIN_APPROVE") == "" && (a.cfg == nil || a.cfg.Approve == "") {
			f.approve = "ask"
		}
		s, err := a.build(ctx, &f, req.Approver, true)
		if err != nil {
			var ue *usageError
			if errors.As(err, &ue) {
				return nil, fmt.Errorf("%w: %s", serve.ErrBadRequest, apiWords.Replace(ue.msg))
			}
			return nil, err
		}
		// The MCP servers' auth checks ride every turn; closing fires the
		// SessionEnd hooks and leaves the shared store open.
		return &serve.Handle{Agent: s.agent, RunHooks: s.runHooks, Close: s.Close}, nil
	}
}
