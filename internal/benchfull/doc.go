// Package benchfull holds the full-stack benchmark: the agent with the
// real Anthropic adapter against an in-process fake provider, beside the
// bare HTTP exchange of the same bytes as its floor, and over each
// durable store beside the in-memory one. Each loop runs in a process of
// its own, so a loop's cost is its own work and its own garbage
// collection. It has no API; run it with
//
//	go test -run '^$' -bench . ./internal/benchfull
//
// and add -benchfull.profile DIR for a CPU profile of each loop.
package benchfull
