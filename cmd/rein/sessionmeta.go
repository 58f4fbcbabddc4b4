package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/session"
)

// The session metadata 'rein run' keeps up to date after every turn, so
// 'rein sessions list' reads one row per session, not every log.
const (
	metaTitle = "title"    // the first prompt's first line
	metaTurns = "turns"    // turns recorded
	metaCost  = "cost_usd" // what they cost, children included
)

// listing is what 'rein sessions list' shows of a session.
type listing struct {
	Session session.ID `json:"session"`
	Title   string     `json:"title"`
	Turns   int        `json:"turns"`
	Cost    float64    `json:"cost_usd"`
	Events  int64      `json:"events"`
	WorkDir string     `json:"workdir,omitempty"`
	Parent  session.ID `json:"parent,omitempty"`
	Created time.Time  `json:"created"`
	Updated time.Time  `json:"updated"`
}

// totals reads a session's title, turns and cost from its metadata; a
// session without them (recorded before they were kept, or by a host
// that does not keep them) is read whole once and they are stored.
func totals(ctx context.Context, st session.Store, info *session.Info) (title string, turns int, cost float64, err error) {
	if n, err := strconv.Atoi(info.Meta[metaTurns]); err == nil {
		c, _ := strconv.ParseFloat(info.Meta[metaCost], 64)
		return info.Meta[metaTitle], n, c, nil
	}
	events, err := collect(st.Events(ctx, info.ID, 0))
	if err != nil {
		return "", 0, 0, err
	}
	for _, ev := range events {
		if um, ok := ev.Data.(*session.UserMessage); ok {
			title = titleOf(partsText(um.Parts))
			break
		}
	}
	sum := agent.SummarizeCost(events, catalogCost)
	turns, cost = sum.Turns, sum.Total.Cost
	// Best effort: a read-only store still lists.
	_ = setTotals(ctx, st, info.ID, title, turns, cost)
	return title, turns, cost, nil
}

func setTotals(ctx context.Context, st session.Store, id session.ID, title string, turns int, cost float64) error {
	if title != "" {
		if err := st.SetMeta(ctx, id, metaTitle, title); err != nil {
			return err
		}
	}
	if err := st.SetMeta(ctx, id, metaCost, strconv.FormatFloat(cost, 'f', -1, 64)); err != nil {
		return err
	}
	return st.SetMeta(ctx, id, metaTurns, strconv.Itoa(turns))
}

// noteTurn adds a finished turn, its prompt and cost, to the session's
// metadata.
func noteTurn(ctx context.Context, st session.Store, id session.ID, prompt string, cost float64) error {
	info, err := st.Info(ctx, id)
	if err != nil {
		return err
	}
	if _, err := strconv.Atoi(info.Meta[metaTurns]); err != nil {
		// No totals yet: the log, this turn included, has them.
		_, _, _, err := totals(ctx, st, info)
		return err
	}
	title, turns, sofar, _ := totals(ctx, st, info)
	if title == "" {
		title = titleOf(prompt)
	}
	return setTotals(ctx, st, id, title, turns+1, sofar+cost)
}

// titleOf is a prompt's first line, cut short.
func titleOf(prompt string) string { return shorten(firstLine(prompt), 80) }

// keepSession ends a run's report on stderr with its session, whose
// totals it updates, or deletes a new session whose run never reached the
// model (a rejected key, a refused connection): there is nothing in it
// to continue.
func (a *app) keepSession(ctx context.Context, s *setup, prompt string, end *session.TurnEnd, t *tally) {
	if unused(s, end, t) {
		s.discard = true
		fmt.Fprintln(a.stderr, "no session kept: the model was never reached")
		return
	}
	if err := noteTurn(ctx, s.store, s.agent.Session(), prompt, t.cost); err != nil {
		fmt.Fprintf(a.stderr, "rein: the session's totals were not updated: %v\n", err)
	}
	fmt.Fprintf(a.stderr, "session %s\n", s.agent.Session())
}

// unused reports whether the run made its session and ended in error
// before the model answered.
func unused(s *setup, end *session.TurnEnd, t *tally) bool {
	failed := end == nil || end.Reason == session.EndError
	return !s.resumed && !t.answered && failed
}
