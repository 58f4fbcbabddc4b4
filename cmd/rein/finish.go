package main

import (
	"errors"
	"strings"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// refused is the exit of a turn whose last answer the provider withheld
// (a refusal or a content filter): not a success, whatever the turn's
// record says, and the provider's explanation, when it gave one, is
// repeated on stderr.
func refused(last *session.AssistantMessage) error {
	if last == nil || last.Finish != llm.FinishFiltered {
		return nil
	}
	why := strings.TrimSpace(resultText(last.Parts))
	if why == "" {
		why = "(no explanation given)"
	}
	return &codeError{code: exitStopped, err: errors.New("the provider refused or filtered the answer: " + shorten(why, 400) + "\nrephrase the prompt, or try another --model")}
}
