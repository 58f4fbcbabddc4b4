package agent

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"time"

	"github.com/reinhq/rein/hook"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool"
)

// Target is one model the agent may talk to: a client plus the provider
// and model names recorded on the log.
type Target struct {
	Provider string
	Model    string // the model name sent in requests
	Client   llm.Model
}

// Options configures an Agent. Only a model is required.
type Options struct {
	// Name is the agent's name on its events; empty for a main agent.
	Name string

	// Model is the primary model, recorded as Provider/ModelName.
	Model     llm.Model
	Provider  string
	ModelName string
	// Fallbacks are tried in order once a target's retries are spent. The
	// switch is sticky for the rest of the run; the next run starts again
	// from the first target.
	Fallbacks []Target

	// System is the system prompt: the host's own instructions.
	System string
	// SystemSections follow System in the system prompt, each as its own
	// section (rules files, the skills catalog, …), so the context
	// breakdown and the prompt-cache telemetry can tell them apart.
	SystemSections []SystemSection
	// Tools the model may call. Names must be unique.
	Tools []tool.Tool
	// ToolSet adds the tools of a set after Tools; its aliases resolve
	// names the model uses for them (a hallucinated MCP-style name, a
	// renamed tool) to the real tool.
	ToolSet *tool.Set
	// DynamicTools, when set, returns tool sets whose contents may change
	// while the agent lives — an MCP server's tools after it announced a
	// change. It is called at New and at every step boundary; when a
	// returned set differs (by identity) from the last, the tools are
	// rebuilt and the next request offers and records the new list.
	DynamicTools func() []*tool.Set
	// Request is a template for every model request's sampling, reasoning
	// and tool-choice fields. Its Model, System, Messages and Tools are
	// set by the agent.
	Request *llm.Request

	// Store keeps the session log. Nil means an in-memory store.
	Store session.Store
	// Session is the session to use: an existing one is opened (and an
	// interrupted last turn repaired), a new id is created. Empty creates
	// a new session with a store-chosen id.
	Session session.ID

	// Durable makes turns resumable in full (see Resume): each turn pins
	// what it was started with (a turn.pin record, checked on resume), a
	// call of a tool that may not be re-run starts only once its start is
	// synced (so a crash never leads to running it twice), and New leaves
	// an open turn (a suspended one) for Resume instead of closing it; a
	// Run, a manual compaction or an idle Inject closes it first, as New
	// would have.
	Durable bool
	// Version is the program's version pinned on durable turns: a resume
	// under another version is refused. Empty means the main module's
	// version from the build information.
	Version string

	// Hooks are the agent-level handlers and observers. They are this
	// agent's own: the children it spawns do not run them.
	Hooks *hook.Set
	// Enforce are handlers that decide this agent's calls and those of
	// every child it spawns, at any depth, with the same decisions: a
	// deny here blocks a child's call. They run before Hooks; a child's
	// chain runs its ancestors' Enforce sets first, the root's outermost;
	// their model and tool middleware wrap the children's models and
	// tools too. Their observers are not subscribed (observe through
	// Hooks: a child's events reach its ancestors' observers).
	Enforce *hook.Set
	// Subagents configures spawning children (see Spawn); nil uses the
	// defaults of SubagentOptions.
	Subagents *SubagentOptions
	// Decider is the model Decide asks when a request names none; nil
	// means the primary model. A small, cheap model usually serves.
	Decider *Target
	// Approver decides calls an approval handler answered with Ask, and,
	// when set, every call of a tool that is not read-only that no handler
	// decided. Nil means an Ask is denied and other calls are allowed.
	Approver tool.Approver
	// DryRun wraps every tool with tool.DryRun: read-only tools run,
	// others answer with what would have happened, unannotated ones are
	// unavailable.
	DryRun bool

	// State keeps tools' durable key/value state per session; each call
	// gets its tool's state staged, committed only when the call succeeds.
	// Nil gives tools no state.
	State tool.StateStore

	// Closers are closed by Close after the last run ends: resources behind
	// the tools, such as a shell's background tasks. Tools that implement
	// io.Closer themselves are closed too.
	Closers []io.Closer
	// Notices, when set, is polled at every step boundary; each string it
	// returns is recorded as context (source "system") that the next
	// request sees — for example the exits of background tasks.
	Notices func() []string
	// Records, when set, is polled at every step boundary like Notices;
	// what it returns is written to the log as it is — host bookkeeping
	// such as *session.MCPEvent that observers and exports should see but
	// the model should not. Payloads that would change the turn's shape or
	// the model's input (boundaries, messages, tool calls and results) are
	// dropped with a warning.
	Records func() []session.Payload

	// ContextWindow is the model's context window in tokens; zero looks
	// the primary model up in llm.DefaultCatalog. OutputReserve is the
	// room kept for the response; zero means Request.MaxTokens, else the
	// catalog's max output capped at 32000, else 8192.
	ContextWindow int
	OutputReserve int
	// Compaction turns automatic compaction on and tunes it; nil leaves
	// only Agent.Compact. See CompactionOptions.
	Compaction *CompactionOptions
	// PromptCache, when set, asks adapters with explicit prompt caching
	// (Anthropic) to place cache breakpoints on every request — tools,
	// system, newest message — so a long tool loop reads its prefix from
	// the cache. It overrides Request.Cache.
	PromptCache *llm.CacheHint
	// Limits are the guards and budgets.
	Limits Limits
	// Retry is the provider retry policy; nil means DefaultRetry.
	Retry *RetryPolicy
	// Parallel caps how many tool calls of one step run at once: 0 means
	// 8, 1 runs them one by one.
	Parallel int
	// StrictPairing makes a request with unpaired tool calls an error
	// (ErrUnpaired) instead of a recorded repair.
	StrictPairing bool
	// ToolGrace is how long a cancelled tool call may take to return
	// before it is recorded as aborted and left behind. Zero means 2s.
	ToolGrace time.Duration
	// SpillDir receives tool output over the step's byte budget. Empty
	// means os.TempDir().
	SpillDir string
	// Cost prices a model's usage in US dollars; nil means the list
	// prices of llm.DefaultCatalog (a model it does not know costs
	// nothing, so a cost budget cannot trip on it).
	Cost func(model string, u llm.Usage) float64
	// ObserverBuffer is each observer's event buffer; 0 means 1024.
	ObserverBuffer int

	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Sleep waits between retries; it must return ctx's error early when
	// ctx is done. Nil means a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// NewID makes run ids; nil means random ids.
	NewID func() string
	// Jitter returns a number in [0,1) for retry jitter; nil means math/rand.
	Jitter func() float64
	// Logger receives diagnostics; nil discards them.
	Logger *slog.Logger
}

// GuardAction is what a guard does when it trips.
type GuardAction string

// Guard actions.
const (
	GuardSteer GuardAction = "steer" // tell the model, let the call run
	GuardBlock GuardAction = "block" // answer the call with a Blocked result
	GuardAbort GuardAction = "abort" // end the turn
)

// Limits are the guards of a run. A zero field means no limit, except
// MaxSteps, whose zero means 100.
type Limits struct {
	// MaxSteps caps the steps of one turn; the turn ends max-steps after
	// the limit's step.
	MaxSteps int
	// MaxCost caps the run's cost in US dollars (needs Options.Cost).
	MaxCost float64
	// MaxTokens caps the run's total tokens (prompt plus output).
	MaxTokens int64
	// Repeat trips on identical consecutive calls.
	Repeat RepeatGuard
	// ToolCalls caps the calls of one tool per turn, by tool name.
	ToolCalls map[string]ToolBudget
	// StepOutputBytes caps the tool output of one step; results past the
	// budget are spilled to a file and the model is told to summarise.
	StepOutputBytes int
}

// RepeatGuard trips when the same tool is called with the same arguments
// Threshold times in a row (Threshold 0 disables it).
type RepeatGuard struct {
	Threshold int
	Action    GuardAction // zero means GuardSteer
}

// ToolBudget caps the calls of one tool per turn.
type ToolBudget struct {
	Max    int
	Action GuardAction // GuardSteer or GuardBlock; zero means GuardBlock
}

// RetryPolicy says how failed model requests are retried.
type RetryPolicy struct {
	// MaxRetries is the number of retries per target after the first
	// attempt; negative disables retries.
	MaxRetries int
	Base       time.Duration // first delay
	Max        time.Duration // cap on one delay (a longer retry-after still wins, up to MaxWait)
	MaxWait    time.Duration // cap on any one wait, retry-after included
	Jitter     float64       // fraction of the delay randomised, 0..1
}

// DefaultRetry is the retry policy used when Options.Retry is nil.
var DefaultRetry = RetryPolicy{MaxRetries: 4, Base: 500 * time.Millisecond, Max: 30 * time.Second, MaxWait: 2 * time.Minute, Jitter: 0.2}

// RunRequest is one call of Run or Stream.
type RunRequest struct {
	// Prompt is the user's message; Parts, when set, replace it.
	Prompt string
	Parts  []llm.Part
	// Hooks are run-level handlers, after the agent's; gone after the run.
	Hooks *hook.Set
	// Schema asks for a final answer that is JSON valid against it; an
	// invalid answer gets one corrective retry.
	Schema json.RawMessage
	// MaxSteps overrides Limits.MaxSteps for this run when positive.
	MaxSteps int
	// Children makes Stream yield the events of the run's subagents too,
	// their children's included, as they happen: each carries its own
	// Session, Agent and ParentRun (see Lineage for its depth). A child's
	// events may come before the parent's subagent.start, which is given
	// with the parent's next events, and always before its subagent.end.
	// Without it only observers see them.
	Children bool
}
