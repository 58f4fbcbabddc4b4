package exec

import "errors"

// NewSandbox returns the best confined context this machine offers:
// Bubblewrap when bwrap works, else Landlock. It returns an error that
// wraps ErrNoSandbox, saying what was tried, when neither works.
func NewSandbox(o *SandboxOptions) (Context, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	bw, errB := NewBubblewrap(o)
	if errB == nil {
		return bw, nil
	}
	ll, errL := NewLandlock(o)
	if errL == nil {
		return ll, nil
	}
	return nil, errors.Join(ErrNoSandbox, errB, errL)
}
