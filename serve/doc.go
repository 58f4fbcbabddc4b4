// Package serve is rein's HTTP host: a JSON API under /v1 to create
// sessions, start turns, steer, cancel and approve tool calls, a resumable
// stream of each session's events, and a web page at / to watch and drive
// them. It is an http.Handler any Go program can mount; 'rein serve' is a
// thin command over it.
//
// The wire format is the session event vocabulary (see package session),
// unchanged: GET /v1/sessions/{id}/events streams the log as Server-Sent
// Events whose id is the event's seq, so a client that reconnects with
// Last-Event-ID receives exactly the events after the last one it saw,
// then new events as they are written. Stream deltas (assistant.chunk with
// seq 0) and approval requests (approval.request, seq 0) are transient:
// sent without an id and never written. The same events come as NDJSON
// with ?format=ndjson&after=SEQ.
//
// Each session's stream has one feed for all its clients: it reads what
// the run appended to the store, encodes each event once, and puts the
// transient events the run hands it in their place among them. Clients
// copy frames at their own pace, woken at most once per
// Options.FlushInterval, writing what gathered in one go; a client behind
// the frames kept reads the store itself. So a slow or vanished client
// never stalls a run, many clients cost the run little, and many sessions
// run at once. A session's agent is closed after Options.IdleTimeout
// without a turn and built again when a request needs it.
//
// Every API request carries the bearer token of Options.Token. Agents come
// from Options.NewAgent, which the host writes (the CLI builds them from
// its flags and config); the server passes each a tool.Approver that waits
// for POST /v1/sessions/{id}/approvals/{call_id}.
//
// Quick start:
//
//	srv, err := serve.New(&serve.Options{
//		Store: store,
//		Token: token,
//		NewAgent: func(ctx context.Context, req *serve.SessionRequest) (*serve.Handle, error) {
//			a, err := agent.New(&agent.Options{
//				Model: model, Store: store, Session: req.Session,
//				Tools: tools, Approver: req.Approver,
//			})
//			return &serve.Handle{Agent: a}, err
//		},
//	})
//	if err != nil { … }
//	defer srv.Close()
//	http.ListenAndServe("127.0.0.1:7420", srv)
package serve
