package agent

import (
	"time"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// RunSummary is a JSON-serialisable postmortem of one or more runs, built
// from the log alone: Summarize(events).
type RunSummary struct {
	Session  session.ID            `json:"session,omitempty"`
	Runs     int                   `json:"runs"`
	Turns    int                   `json:"turns"`
	Steps    int                   `json:"steps"`
	Ends     map[string]int        `json:"ends,omitempty"` // turn end reasons
	Usage    llm.Usage             `json:"usage"`
	Cost     float64               `json:"cost,omitempty"`
	ByModel  map[string]ModelUsage `json:"by_model,omitempty"`
	Duration time.Duration         `json:"duration"`

	ToolCalls        int                `json:"tool_calls"`
	ToolErrors       int                `json:"tool_errors"`
	Outcomes         map[string]int     `json:"outcomes,omitempty"`
	Blocked          []CallNote         `json:"blocked,omitempty"`
	ValidationErrors []CallNote         `json:"validation_errors,omitempty"`
	Errors           []string           `json:"errors,omitempty"`
	Retries          []session.Retry    `json:"retries,omitempty"`
	Fallbacks        []session.Fallback `json:"fallbacks,omitempty"`
	Guards           []Decision         `json:"guards,omitempty"`
	Decisions        []Decision         `json:"decisions,omitempty"`
	Repairs          []session.Repair   `json:"repairs,omitempty"`
	Interrupted      int                `json:"interrupted,omitempty"` // interrupted assistant messages

	// Children are the children the runs spawned (from subagent.end
	// events); Total adds their usage and cost to the runs' own.
	Children []ChildUsage `json:"children,omitempty"`
	Total    Totals       `json:"total"`
}

// CallNote names a tool call and what happened to it.
type CallNote struct {
	CallID llm.CallID `json:"call_id"`
	Name   string     `json:"name"`
	Text   string     `json:"text"`
}

// Decision is a hook or guard decision found in the log.
type Decision struct {
	Point    string     `json:"point"`
	Hook     string     `json:"hook,omitempty"`
	Decision string     `json:"decision"`
	Reason   string     `json:"reason,omitempty"`
	CallID   llm.CallID `json:"call_id,omitempty"`
}

// Summarize builds a postmortem from events (a run's, a session's, or
// any slice in seq order), pricing usage at llm.DefaultCatalog's list
// prices; SummarizeCost takes another price list.
func Summarize(events []session.Event) *RunSummary { return SummarizeCost(events, catalogCost) }

// SummarizeCost is Summarize pricing each assistant message's usage with
// cost (nil prices nothing).
func SummarizeCost(events []session.Event, cost func(model string, u llm.Usage) float64) *RunSummary {
	s := &RunSummary{Ends: map[string]int{}, ByModel: map[string]ModelUsage{}, Outcomes: map[string]int{}}
	runs := map[session.RunID]bool{}
	var first, last time.Time
	for _, ev := range events {
		if ev.Seq == 0 {
			continue // a transient event
		}
		if s.Session == "" {
			s.Session = ev.Session
		}
		if first.IsZero() {
			first = ev.Time
		}
		last = ev.Time
		if ev.Run != "" {
			runs[ev.Run] = true
		}
		s.add(ev.Data, cost)
	}
	s.Runs = len(runs)
	s.Total = totalOf(s.Usage, s.Cost, s.ByModel, s.Children)
	if !first.IsZero() {
		s.Duration = last.Sub(first)
	}
	return s
}

// add counts one event's payload.
func (s *RunSummary) add(p session.Payload, cost func(model string, u llm.Usage) float64) {
	switch p := p.(type) {
	case *session.TurnStart:
		s.Turns++
	case *session.TurnEnd:
		s.Ends[string(p.Reason)]++
		if p.Reason == session.EndError && p.Message != "" {
			s.Errors = append(s.Errors, p.Message)
		}
	case *session.StepStart:
		s.Steps++
	case *session.AssistantMessage:
		s.addMessage(p, cost)
	case *session.ToolCall:
		s.ToolCalls++
	case *session.ToolResult:
		s.addResult(p)
	case *session.HookDecision:
		d := Decision{Point: p.Point, Hook: p.Hook, Decision: p.Decision, Reason: p.Reason, CallID: p.CallID}
		if isGuard(p.Hook) || isGuard(p.Point) { // built-in guards (older logs name them by point)
			s.Guards = append(s.Guards, d)
		} else {
			s.Decisions = append(s.Decisions, d)
		}
	case *session.Retry:
		s.Retries = append(s.Retries, *p)
	case *session.Fallback:
		s.Fallbacks = append(s.Fallbacks, *p)
	case *session.Repair:
		s.Repairs = append(s.Repairs, *p)
	case *session.SubagentEnd:
		s.Children = append(s.Children, childUsageOf(p))
	}
}

func (s *RunSummary) addMessage(p *session.AssistantMessage, cost func(model string, u llm.Usage) float64) {
	model := ""
	if p.Provenance != nil {
		model = p.Provenance.Model
	}
	mu := s.ByModel[model]
	mu.Steps++
	mu.Usage.Add(p.Usage)
	if cost != nil {
		c := cost(model, p.Usage)
		mu.Cost += c
		s.Cost += c
	}
	s.ByModel[model] = mu
	s.Usage.Add(p.Usage)
	if p.Interrupted {
		s.Interrupted++
	}
}

func (s *RunSummary) addResult(p *session.ToolResult) {
	s.Outcomes[p.Outcome]++
	note := CallNote{CallID: p.CallID, Name: p.Name, Text: partsText(p.Parts)}
	switch p.Outcome {
	case session.OutcomeGateBlock:
		s.Blocked = append(s.Blocked, note)
	case session.OutcomeInvalidInput:
		s.ValidationErrors = append(s.ValidationErrors, note)
	case session.OutcomeExecute:
		if p.IsError {
			s.ToolErrors++
		}
	}
}
