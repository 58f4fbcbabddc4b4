package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/session"
)

// The session metadata that keeps 'rein sessions list' to one row per
// session rather than every log: the totals, and the seq of the last
// event they count, so a listing reads only what was appended since —
// by 'rein run', 'rein chat' or any other host.
const (
	metaTitle = "title"      // the first prompt's first line
	metaTurns = "turns"      // turns recorded
	metaCost  = "cost_usd"   // what they cost, children included
	metaSeq   = "totals_seq" // the last event counted
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

// totals returns a session's title, turns and cost: those its metadata
// keeps, plus those of the events appended since they were counted, and
// stores the new totals.
func totals(ctx context.Context, st session.Store, info *session.Info) (title string, turns int, cost float64, err error) {
	from, err := strconv.ParseInt(info.Meta[metaSeq], 10, 64)
	if err == nil && from <= info.LastSeq {
		title = info.Meta[metaTitle]
		turns, _ = strconv.Atoi(info.Meta[metaTurns])
		cost, _ = strconv.ParseFloat(info.Meta[metaCost], 64)
	} else {
		from = 0
	}
	if from == info.LastSeq {
		return title, turns, cost, nil
	}
	events, err := collect(st.Events(ctx, info.ID, from))
	if err != nil || len(events) == 0 {
		return title, turns, cost, err
	}
	for _, ev := range events {
		if um, ok := ev.Data.(*session.UserMessage); ok && title == "" {
			title = titleOf(partsText(um.Parts))
		}
	}
	sum := agent.SummarizeCost(events, catalogCost)
	turns, cost = turns+sum.Turns, cost+sum.Total.Cost
	// Best effort: a read-only store still lists.
	_ = setTotals(ctx, st, info.ID, title, turns, cost, events[len(events)-1].Seq)
	return title, turns, cost, nil
}

func setTotals(ctx context.Context, st session.Store, id session.ID, title string, turns int, cost float64, seq int64) error {
	for _, kv := range [][2]string{
		{metaTitle, title},
		{metaTurns, strconv.Itoa(turns)},
		{metaCost, strconv.FormatFloat(cost, 'f', -1, 64)},
		{metaSeq, strconv.FormatInt(seq, 10)}, // last: the others are in place
	} {
		if kv[1] == "" {
			continue
		}
		if err := st.SetMeta(ctx, id, kv[0], kv[1]); err != nil {
			return err
		}
	}
	return nil
}

// noteTurn counts a finished turn in the session's metadata.
func noteTurn(ctx context.Context, st session.Store, id session.ID) error {
	info, err := st.Info(ctx, id)
	if err != nil {
		return err
	}
	_, _, _, err = totals(ctx, st, info)
	return err
}

// titleOf is a prompt's first line, cut short.
func titleOf(prompt string) string { return shorten(firstLine(prompt), 80) }

// keepSession ends a run's report on stderr with its session, whose
// totals it updates, or deletes a new session whose run never reached the
// model (a rejected key, a refused connection): there is nothing in it
// to continue.
func (a *app) keepSession(ctx context.Context, s *setup, end *session.TurnEnd, t *tally) {
	if unused(s, end, t) {
		s.discard = true
		fmt.Fprintln(a.stderr, "no session kept: the model was never reached")
		return
	}
	if err := noteTurn(ctx, s.store, s.agent.Session()); err != nil {
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
