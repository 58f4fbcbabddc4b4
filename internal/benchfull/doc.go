// Package benchfull holds the full-stack benchmark: the agent with the
// real Anthropic adapter against an in-process fake provider, beside the
// bare HTTP exchange of the same bytes as its floor. It has no API; run it
// with
//
//	go test -run '^$' -bench . ./internal/benchfull
package benchfull
