package main

import (
	"encoding/json"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// jsonDelta is one streamed piece of the answer's text in --json output.
// It is not a session event: the log keeps the whole message instead.
type jsonDelta struct {
	Type string `json:"type"` // "text.delta"
	Text string `json:"text"`
	// A subagent's delta names it and its session.
	Agent   string     `json:"agent,omitempty"`
	Session session.ID `json:"session,omitempty"`
}

// jsonResult is the last line of --json output: how the turn ended.
type jsonResult struct {
	Type    string             `json:"type"` // "result"
	Session session.ID         `json:"session"`
	End     session.EndReason  `json:"end,omitempty"`
	Message string             `json:"message,omitempty"` // why it ended, when not completed
	Answer  string             `json:"answer"`
	Steps   int                `json:"steps"`
	Usage   llm.Usage          `json:"usage"`
	Cost    float64            `json:"cost_usd"`
	ByModel map[string]float64 `json:"cost_by_model_usd"`
}

// tally keeps what the result line reports, event by event.
type tally struct {
	answer  string
	steps   int
	usage   llm.Usage
	cost    float64
	byModel map[string]float64
	// answered: the model answered at least once (a message was recorded).
	answered bool
}

func (t *tally) add(ev session.Event) {
	if ev.ParentRun != "" {
		return // a child's: its subagent.end brings its totals
	}
	switch d := ev.Data.(type) {
	case *session.StepStart:
		t.steps++
	case *session.AssistantMessage:
		t.answered = true
		t.usage.Add(d.Usage)
		model := ""
		if d.Provenance != nil {
			model = d.Provenance.Model
		}
		c := catalogCost(model, d.Usage)
		t.cost += c
		if t.byModel == nil {
			t.byModel = map[string]float64{}
		}
		t.byModel[model] += c
		if txt := resultText(d.Parts); txt != "" {
			t.answer = txt
		}
	case *session.SubagentEnd:
		// A child's usage and cost, its own children's included.
		t.usage.Add(d.Usage)
		t.cost += d.Cost
		for model, u := range d.ByModel {
			if t.byModel == nil {
				t.byModel = map[string]float64{}
			}
			t.byModel[model] += u.Cost
		}
	}
}

// delta writes a streamed text piece as one line.
func (r *jsonRenderer) delta(ev session.Event) {
	d, ok := ev.Data.(*session.AssistantChunk)
	if !ok {
		return
	}
	for _, dl := range d.Deltas {
		if dl.Kind == "text" && dl.Text != "" {
			jd := jsonDelta{Type: "text.delta", Text: dl.Text}
			if ev.ParentRun != "" {
				jd.Agent, jd.Session = ev.Agent, ev.Session
			}
			r.line(jd)
		}
	}
}

// result writes the result line.
func (r *jsonRenderer) result(sid session.ID, end *session.TurnEnd, runErr error) {
	res := jsonResult{Type: "result", Session: sid, Answer: r.tally.answer, Steps: r.tally.steps,
		Usage: r.tally.usage, Cost: r.tally.cost, ByModel: r.tally.byModel}
	if res.ByModel == nil {
		res.ByModel = map[string]float64{}
	}
	if end != nil {
		res.End = end.Reason
		res.Message = end.Message
	}
	if err := turnExit(end, runErr); err != nil {
		res.Message = err.Error()
	} else if err := refused(r.last); err != nil {
		res.Message = err.Error()
	}
	r.line(res)
	r.w.Flush()
}

func (r *jsonRenderer) line(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	r.w.Write(append(b, '\n'))
	r.w.Flush()
}
