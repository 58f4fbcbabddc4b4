// Package agent is rein's loop: it runs a language model with tools over a
// session log, one turn at a time, and lets hooks gate every step.
//
// A turn answers one prompt. It is a sequence of steps; a step is one
// model request plus the tool calls the response asked for. Everything the
// loop does is written to the session log as it happens (see package
// session for the vocabulary): turn.start … turn.end with balanced
// step.start/step.end on every exit path, the request header when what it
// names changes, the assistant message with its usage and provenance,
// tool.call before a call runs and tool.result after, in the model's
// order, and a hook.decision for every decision that is not "continue".
// The messages of each request are derived from the log incrementally, so
// a step costs the same at step 10 and at step 10,000, and a session can
// be reopened, resumed after a crash (the interrupted turn is closed by a
// recorded repair) and replayed.
//
// The loop is built from a few parts, each in its own file: the log
// writer (log.go: seqs, batching, the one write per flush, the derived
// history), the step (step.go, model.go: the request, the stream, retries
// and fallback), the tool pipeline (pipeline.go, batch.go) and turn
// control (control.go: steer, follow-up, inject, cancel). Every way a
// turn ends is one value that closes it on the log.
//
// The tool pipeline of one call is: gate hook → unknown-tool check →
// validation with coercion → pre-tool-use hook (edits validated again;
// the built-in guards — repeat, per-tool budgets — are its last handlers)
// → approval → execution through tool.Run → tool-error substitution →
// result transform (the step's output budget is its last handler) → post
// notification. Calls of one step run in parallel up to Options.Parallel;
// exclusive tools run alone. A Run's loop is a coroutine (inline.go): a
// call that runs with none beside it (a step's only or last call, or any
// when calls run one at a time or its tool runs alone) runs on the
// worker driving the loop, with no hand-off between goroutines, while the
// caller of Run keeps the call's grace. A Stream's loop runs on the caller's
// goroutine, where its events are given, and hands each call to a
// worker. Guards record their decisions like any other handler, under
// their names (guard.repeat, guard.tool-budget, guard.output).
//
// Hosts wrap the model and the tools with middleware on a hook.Set
// (WrapModel, WrapTool); the first listed is outermost.
//
// Failed model requests are retried with exponential backoff and jitter,
// honouring retry-after, never for quota errors; after a target's retries
// the next fallback target serves the rest of the run.
//
// Control from other goroutines: Steer (delivered at the next step
// boundary), FollowUp (when the turn would end), Inject (context without a
// turn), Cancel, CancelTool, WaitIdle, Reset and Close.
//
// Long runs: Context reports what the next request holds (system sections,
// tool definitions, conversation) against the model's window less its
// output reserve. With Options.Compaction set, a run whose next request
// would pass the threshold (80% by default) first compacts: the model
// summarises the older steps, a session.Compaction event replaces them in
// the derived history (the log keeps them), the latest steps stay
// verbatim, and recently read files and the todo list are re-attached as
// context. Compact does the same on demand while idle. A failed summary
// changes nothing; after three in a row a run stops trying. A request the
// provider still finds too long is compacted, then has its oldest tool
// results elided, before the turn ends with an error saying what to do.
// Compaction progress is published as transient
// session.CompactionProgress events. A tool that remembers what the model
// has read implements CompactListener (found through any wrapper) and
// forgets it when told.
//
// Prompt cache: Options.PromptCache has adapters with explicit caching
// place breakpoints on every request; every request and response goes
// through a cachewatch.Watcher, whose drifts and breaks are logged
// (cache.drift, cache.break) and so reach observers, and CacheExpiresAt
// and CacheImpact expose its estimates.
//
// Observers see every logged event, and the transient ones of the type
// they subscribe to: assistant.chunk deltas, tool.progress,
// compaction.progress.
//
// Typed decisions (decide.go): Decide asks a model — Options.Decider, a
// small cheap one, or the request's own — for the probability that a
// predicate holds, a choice among named options or a score on a range,
// with structured output. The answer is validated, an invalid one asked
// again once, and the decision is recorded as a session.Decision event
// with its answer, attempts, usage and cost. It never fails the run:
// every failure is a *DecideError wrapping ErrUndecided. A tool decides
// with the package function Decide and its call's context.
//
// Subagents (kin.go, spawn.go, spawntool.go, rollup.go): Spawn, from a
// tool or hook of a run, or the model-facing SpawnTool, runs a child
// agent over the same store in a session of its own — empty, or a fork
// of the parent's log up to the spawning step, balanced. The parent's log
// records subagent.start (the child's session and run, name, depth) and
// subagent.end (answer, end reason, usage and cost by model, the child's
// own children included); the child's events carry the parent's run as
// ParentRun and are published on the ancestors' buses too, so the
// parent's observers see them (Lineage gives their depth). Enforcement
// passes down as hooks: Options.Enforce and the Approver decide every
// descendant's calls, while Options.Hooks stay the agent's own. A child
// is cancelled with its parent's cause, or alone through CancelTool on
// its spawn call (cause call-cancelled). Options.Subagents caps depth
// and concurrency: the main agent's spawns over the cap wait (recorded
// as subagent.queued), deeper ones are refused; a child's budgets are at
// most what remains of the parent's, and the parent's budgets count its
// children. Resources a finished child leaves running (a shell's
// background tasks, SpawnRequest.Closers) are handed to the parent
// (subagent.handoff) and closed when it closes. Result.Children and
// Result.Total, and the same fields of RunSummary, roll the children up;
// a summary of the parent's log alone has them too. Named definitions
// (Markdown with YAML front matter) are read by package agentdef and
// listed in the spawn tool's description.
//
// Durable turns (durable*.go): Suspend stops a run at its next safe point
// (between steps, after the model call in flight, or once the running
// tool calls settle, cancelling those still running after a grace) and
// leaves the turn open on the log with a turn.suspend record; Resume
// continues it, in this process or another over the same store, from its
// last completed record: no finished model call is sent again, calls
// with results keep them, a started call runs again only when its tool
// may be re-run (tool.Rerunnable), else it is answered as interrupted,
// and calls that never started run. A turn a crash cut short is closed
// by the repair; Resume continues it in a new turn (trigger resume).
// With Options.Durable each turn is pinned (turn.pin: model, tools,
// version; a resume that differs is a *ResumeMismatchError) and a call
// that may not be re-run starts only once its start is synced.
//
// Quick start:
//
//	a, err := agent.New(&agent.Options{
//		Model: model, Provider: "anthropic", ModelName: "claude-sonnet-4-5",
//		System: "You are a careful engineer.",
//		Tools:  []tool.Tool{readFile, shell},
//		Store:  store, // nil keeps the session in memory
//		Hooks:  hooks,
//	})
//	if err != nil { … }
//	defer a.Close()
//	res, err := a.Run(ctx, &agent.RunRequest{Prompt: "Why does the build fail?"})
//	fmt.Println(res.Reason, res.Text)
//
//	for ev, err := range a.Stream(ctx, &agent.RunRequest{Prompt: "Fix it."}) {
//		// every logged event, plus transient events with Seq 0: stream
//		// deltas (*session.AssistantChunk) and compaction progress
//	}
package agent
