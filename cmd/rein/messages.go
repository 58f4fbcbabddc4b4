package main

import (
	"errors"
	"fmt"

	"github.com/reinhq/rein/agent"
	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// budgetMessage says which budget ended the turn in the CLI's terms: the
// flag to raise and the amounts in its units.
func budgetMessage(end *session.TurnEnd, runErr error) error {
	var be *agent.BudgetError
	if !errors.As(runErr, &be) {
		return fmt.Errorf("the turn reached its budget (%s); continue with --session", end.Code)
	}
	if be.Budget == "cost" {
		return fmt.Errorf("the turn reached its cost budget: raise --max-cost ($%.2f used of $%.2f) and continue with --session", be.Used, be.Limit)
	}
	return fmt.Errorf("the turn reached its %s budget (%g used of %g); continue with --session", be.Budget, be.Used, be.Limit)
}

// overflowMessage explains a conversation that no longer fits the model's
// window in the CLI's terms; nil when runErr is something else.
func overflowMessage(runErr error) error {
	if llm.KindOf(runErr) != llm.ErrContextTooLong {
		return nil
	}
	why := ""
	var pe *llm.ProviderError
	if errors.As(runErr, &pe) && pe.Message != "" {
		why = " (the provider said: " + shorten(pe.Message, 200) + ")"
	}
	return fmt.Errorf("the conversation no longer fits the model's context window, even after compacting%s; run /compact in 'rein chat', start a new session (leave out --session and -c), or choose a --model with a larger window", why)
}
