package tool

import (
	"context"
	"fmt"
	"unicode/utf8"
)

// maxDryRunArgs bounds how much of the arguments a dry-run stub repeats.
const maxDryRunArgs = 2000

// MetaDryRun is the Result.Meta key set to true on results DryRun made up
// instead of running the tool.
const MetaDryRun = "tool.dry_run"

// DryRun wraps t so it changes nothing:
//
//   - a read-only tool runs as usual;
//   - an annotated tool that is not read-only (destructive or not) does
//     not run; its result says what would have happened: the tool's name
//     and the arguments it would have had;
//   - an unannotated tool does not run; its error result says the tool is
//     unavailable in dry-run mode, since nothing says it is safe.
//
// DryRun is a Middleware, and the wrapper a Wrapper: As finds what t
// declares (its Validator, Origin, Subject, Close) through it.
func DryRun(t Tool) Tool { return &dryRun{t} }

type dryRun struct{ t Tool }

// Spec returns the wrapped tool's spec.
func (d *dryRun) Spec() Spec { return d.t.Spec() }

// Unwrap returns the wrapped tool.
func (d *dryRun) Unwrap() Tool { return d.t }

// Call runs a read-only tool and describes any other call instead.
func (d *dryRun) Call(ctx context.Context, call *Call) (*Result, error) {
	sp := d.t.Spec()
	switch {
	case sp.Annotations == nil:
		r := Errorf("Tool %s is unavailable in dry-run mode: it is not annotated as read-only, so running it could change something.", sp.Name)
		return r.WithMeta(MetaDryRun, true), nil
	case sp.Annotations.ReadOnly:
		return d.t.Call(ctx, call)
	}
	args := string(call.Args)
	if args == "" {
		args = "{}"
	}
	if len(args) > maxDryRunArgs {
		cut := maxDryRunArgs
		for cut > 0 && !utf8.RuneStart(args[cut]) {
			cut--
		}
		args = fmt.Sprintf("%s… (%d bytes in all)", args[:cut], len(args))
	}
	what := "change"
	if sp.Annotations.Destructive {
		what = "change or delete"
	}
	r := Text(fmt.Sprintf("Dry run: %s was not run. It would have been called with %s and could %s things; nothing was changed.", sp.Name, args, what))
	return r.WithMeta(MetaDryRun, true), nil
}

// DryRunSet returns a new set holding each tool of s wrapped by DryRun,
// with the same order and aliases. It is WrapSet(s, DryRun).
func DryRunSet(s *Set) *Set { return WrapSet(s, DryRun) }
