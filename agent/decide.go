package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// DecideKind is the shape of a decision's answer.
type DecideKind string

// The kinds of decision.
const (
	// DecideProbability asks for the probability, from 0 to 1, that a
	// predicate holds.
	DecideProbability DecideKind = "probability"
	// DecideChoice asks for one of named options.
	DecideChoice DecideKind = "choice"
	// DecideScore asks for a number on a range.
	DecideScore DecideKind = "score"
)

// DecideRequest is one decision to ask of a model.
type DecideRequest struct {
	Kind DecideKind
	// Question is the predicate of a probability, the question of a
	// choice, or what a score rates.
	Question string
	// Context is the material to judge (a diff, a tool's output), sent
	// as is after the question.
	Context string
	// Options are a choice's names: at least two, distinct.
	Options []string
	// Min and Max bound a score; both zero means 0 to 10.
	Min, Max float64
	// Target is the model asked; nil means Options.Decider, else the
	// primary model.
	Target *Target
	// MaxTokens caps each answer; zero means 512.
	MaxTokens int
	// CallID is the tool call that asks, recorded with the decision.
	CallID llm.CallID
}

// Verdict is a validated answer: Probability, Choice or Score as the
// kind asked, the model's short reason, and what it took.
type Verdict struct {
	Kind        DecideKind
	Probability float64
	Choice      string
	Score       float64
	Reason      string
	// Attempts is the number of requests made: 2 when the first answer
	// was invalid.
	Attempts int
	Provider string
	Model    string
	Usage    llm.Usage
	Cost     float64
}

// ErrUndecided is wrapped by every error of Decide: the decision has no
// answer, and the run that asked goes on.
var ErrUndecided = errors.New("agent: no decision")

// DecideCause says why a decision has no answer.
type DecideCause string

// The causes of a DecideError.
const (
	// DecideBadRequest: the request cannot be asked (no question, too few
	// options, an empty range, no model); nothing was sent.
	DecideBadRequest DecideCause = "bad-request"
	// DecideModelFailed: the model request failed.
	DecideModelFailed DecideCause = "model-failed"
	// DecideInvalidAnswer: the answer, and the one asked again, were not
	// valid for the kind.
	DecideInvalidAnswer DecideCause = "invalid-answer"
)

// DecideError is why Decide returned no answer. It wraps ErrUndecided
// and, for a failed model request, the provider's error. Usage and Cost
// are what the attempts used.
type DecideError struct {
	Kind     DecideKind
	Cause    DecideCause
	Attempts int
	Usage    llm.Usage
	Cost     float64
	// Answer is the last invalid answer, for DecideInvalidAnswer.
	Answer string
	Err    error
}

// Error says which decision failed, why, and the cause.
func (e *DecideError) Error() string {
	return fmt.Sprintf("agent: decide %s: %s: %v", e.Kind, e.Cause, e.Err)
}

// Unwrap returns ErrUndecided and the underlying error.
func (e *DecideError) Unwrap() []error { return []error{ErrUndecided, e.Err} }

// Decide asks a model for a typed decision with structured output,
// validates the answer, asks once more when it is invalid, and records
// the decision — answer or failure, attempts, usage and cost — as a
// session.Decision event: in the run when ctx is that of one of the
// agent's runs (a tool's or hook's), else in a turn of its own. A
// decision never fails a run: every error is a *DecideError wrapping
// ErrUndecided, for the caller to fall back on.
func (a *Agent) Decide(ctx context.Context, req *DecideRequest) (*Verdict, error) {
	q, t, err := a.decideQuery(req)
	if err != nil {
		return nil, err
	}
	d, derr := a.ask(ctx, q, t)
	rec := q.record(t, d, derr)
	r := runOf(ctx)
	if r != nil && r.a != a {
		r = nil // a tool of another agent's run asks this one
	}
	a.recordIn(ctx, r, session.TriggerDecide, rec)
	if r != nil {
		r.ctl.charged.add(t.Model, rec.Usage, rec.Cost) // the run's budgets count it
	}
	if derr != nil {
		return nil, derr
	}
	return d, nil
}

// Decide asks the agent whose run ctx belongs to (see Agent.Decide): the
// way a tool decides.
func Decide(ctx context.Context, req *DecideRequest) (*Verdict, error) {
	a := RunningAgent(ctx)
	if a == nil {
		kind := DecideKind("")
		if req != nil {
			kind = req.Kind
		}
		return nil, &DecideError{Kind: kind, Cause: DecideBadRequest,
			Err: errors.New("there is no run to ask for: call Decide from a tool or hook of a run, with its context, or call Agent.Decide")}
	}
	return a.Decide(ctx, req)
}

// decideQuery checks req and resolves its model.
func (a *Agent) decideQuery(req *DecideRequest) (*DecideRequest, Target, error) {
	bad := func(kind DecideKind, format string, args ...any) (*DecideRequest, Target, error) {
		return nil, Target{}, &DecideError{Kind: kind, Cause: DecideBadRequest, Err: fmt.Errorf(format, args...)}
	}
	if req == nil {
		return bad("", "no request; pass a *DecideRequest with a Kind and a Question")
	}
	q := *req
	if strings.TrimSpace(q.Question) == "" {
		return bad(q.Kind, "the question is empty; set DecideRequest.Question")
	}
	switch q.Kind {
	case DecideProbability:
	case DecideChoice:
		if len(q.Options) < 2 {
			return bad(q.Kind, "a choice needs at least two options; %d given", len(q.Options))
		}
		for i, o := range q.Options {
			if strings.TrimSpace(o) == "" || slices.Index(q.Options, o) != i {
				return bad(q.Kind, "option %d (%q) is empty or repeated; give distinct names", i, o)
			}
		}
	case DecideScore:
		if q.Min == 0 && q.Max == 0 {
			q.Max = 10
		}
		if !(q.Min < q.Max) || math.IsInf(q.Max-q.Min, 0) {
			return bad(q.Kind, "the range %g to %g is empty; set Min below Max", q.Min, q.Max)
		}
	default:
		return bad(q.Kind, "unknown kind %q; use probability, choice or score", q.Kind)
	}
	t := a.targets[0]
	switch {
	case q.Target != nil:
		t = *q.Target
	case a.opts.Decider != nil:
		t = *a.opts.Decider
	}
	if t.Client == nil {
		return bad(q.Kind, "the decision model %s/%s has no Client", t.Provider, t.Model)
	}
	if q.MaxTokens <= 0 {
		q.MaxTokens = 512
	}
	return &q, t, nil
}

// ask sends the question, and once more after an invalid answer.
func (a *Agent) ask(ctx context.Context, q *DecideRequest, t Target) (*Verdict, *DecideError) {
	req := &llm.Request{
		Model:          t.Model,
		System:         []llm.Text{{Text: decideSystem}},
		Messages:       []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{&llm.Text{Text: q.prompt()}}}},
		MaxTokens:      q.MaxTokens,
		ResponseFormat: &llm.ResponseFormat{Name: "decision", Schema: q.schema(), Strict: true},
	}
	fail := &DecideError{Kind: q.Kind}
	for attempt := 1; attempt <= 2; attempt++ {
		fail.Attempts = attempt
		res, err := llm.Collect(t.Client.Stream(ctx, req))
		if res != nil {
			fail.Usage.Add(res.Usage)
			fail.Cost += a.opts.Cost(t.Model, res.Usage)
		}
		if err != nil {
			fail.Cause, fail.Err = DecideModelFailed, err
			return nil, fail
		}
		text := res.Message.Text()
		d, verr := q.parse(text)
		if verr == nil {
			d.Attempts, d.Usage, d.Cost, d.Provider, d.Model = attempt, fail.Usage, fail.Cost, t.Provider, t.Model
			return d, nil
		}
		fail.Cause, fail.Err, fail.Answer = DecideInvalidAnswer, verr, text
		req.Messages = append(req.Messages,
			llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{&llm.Text{Text: text}}},
			llm.Message{Role: llm.RoleUser, Parts: []llm.Part{&llm.Text{Text: "That answer is not valid: " + verr.Error() +
				". Answer again with only the JSON object the schema describes."}}})
	}
	return nil, fail
}

const decideSystem = "You make one decision. Answer with only a JSON object that matches the schema you are given: " +
	"no prose around it, no code fence. Keep the reason to one short sentence."

func (q *DecideRequest) prompt() string {
	var b strings.Builder
	switch q.Kind {
	case DecideProbability:
		b.WriteString("Give the probability, from 0 to 1, that this holds:\n")
	case DecideChoice:
		b.WriteString("Choose exactly one option (")
		for i, o := range q.Options {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(strconv.Quote(o))
		}
		b.WriteString(") for:\n")
	case DecideScore:
		fmt.Fprintf(&b, "Give a score from %g to %g for:\n", q.Min, q.Max)
	}
	b.WriteString(q.Question)
	if q.Context != "" {
		b.WriteString("\n\n<context>\n")
		b.WriteString(q.Context)
		b.WriteString("\n</context>")
	}
	return b.String()
}

// schema is the JSON Schema of the answer: the kind's field and a reason.
func (q *DecideRequest) schema() json.RawMessage {
	field := map[string]any{"type": "number"}
	switch q.Kind {
	case DecideProbability:
		field["minimum"], field["maximum"] = 0, 1
	case DecideChoice:
		field = map[string]any{"type": "string", "enum": q.Options}
	case DecideScore:
		field["minimum"], field["maximum"] = q.Min, q.Max
	}
	s := map[string]any{
		"type":                 "object",
		"properties":           map[string]any{string(q.Kind): field, "reason": map[string]any{"type": "string"}},
		"required":             []string{string(q.Kind), "reason"},
		"additionalProperties": false,
	}
	b, _ := json.Marshal(s) // maps of strings, numbers and slices of strings always encode
	return b
}

// parse validates an answer: a JSON object (a code fence around it is
// forgiven) with the kind's field in range.
func (q *DecideRequest) parse(text string) (*Verdict, error) {
	text = strings.TrimSpace(text)
	if s, ok := strings.CutPrefix(text, "```"); ok {
		s = strings.TrimPrefix(s, "json")
		text = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "```"))
	}
	var ans map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &ans); err != nil {
		return nil, errors.New("it is not a JSON object")
	}
	raw, ok := ans[string(q.Kind)]
	if !ok {
		return nil, fmt.Errorf("it has no %q field", q.Kind)
	}
	d := &Verdict{Kind: q.Kind}
	if r, ok := ans["reason"]; ok {
		_ = json.Unmarshal(r, &d.Reason) // a reason that is not a string is left out
	}
	if q.Kind == DecideChoice {
		if err := json.Unmarshal(raw, &d.Choice); err != nil || !slices.Contains(q.Options, d.Choice) {
			return nil, fmt.Errorf("choice %s is not one of the options %q", raw, q.Options)
		}
		return d, nil
	}
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("%s %s is not a number", q.Kind, raw)
	}
	lo, hi := 0.0, 1.0
	if q.Kind == DecideScore {
		lo, hi = q.Min, q.Max
	}
	if v < lo || v > hi {
		return nil, fmt.Errorf("%s %g is outside %g to %g", q.Kind, v, lo, hi)
	}
	if q.Kind == DecideScore {
		d.Score = v
	} else {
		d.Probability = v
	}
	return d, nil
}

// record is the event of a decision asked.
func (q *DecideRequest) record(t Target, d *Verdict, fail *DecideError) *session.Decision {
	e := &session.Decision{Kind: string(q.Kind), Question: q.Question, Options: q.Options, Provider: t.Provider, Model: t.Model, CallID: q.CallID}
	if q.Kind == DecideScore {
		e.Min, e.Max = q.Min, q.Max
	}
	if fail != nil {
		e.Error, e.Attempts, e.Usage, e.Cost = string(fail.Cause)+": "+llm.Redact(fail.Err.Error()), fail.Attempts, fail.Usage, fail.Cost
		return e
	}
	e.Value = d.Probability
	if q.Kind == DecideScore {
		e.Value = d.Score
	}
	e.Choice, e.Reason, e.Attempts, e.Usage, e.Cost = d.Choice, d.Reason, d.Attempts, d.Usage, d.Cost
	return e
}

// recordIn writes ps for a caller within run r (nil outside any run):
// into the run while it is live, else — when the agent is idle — in a
// turn of its own opened with trigger. With another run in flight they
// are only logged as a warning: they cannot join a run they are not
// part of.
func (a *Agent) recordIn(ctx context.Context, r *runState, trigger string, ps ...session.Payload) {
	a.mu.Lock()
	live := r != nil && a.ctl == r.ctl
	idle := a.ctl == nil
	a.mu.Unlock()
	switch {
	case live:
		for _, p := range ps {
			r.emit(p)
		}
	case idle:
		if err := a.w.record(context.WithoutCancel(ctx), trigger, ps...); err != nil {
			a.log.Error("a record made outside a run was not written", "trigger", trigger, "err", err)
		}
	default:
		a.log.Warn("a record made outside the run in flight is only in the caller's hands", "trigger", trigger)
	}
}
