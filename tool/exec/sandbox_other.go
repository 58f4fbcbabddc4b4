//go:build !linux

package exec

import (
	"errors"
)

var errLinuxOnly = errors.New("exec: bubblewrap and Landlock confinement exist on Linux only; this platform can run commands unconfined")

// Bubblewrap confines commands with bwrap on Linux; elsewhere it cannot
// be made.
type Bubblewrap struct{ Unconfined }

// NewBubblewrap fails on this platform.
func NewBubblewrap(o *SandboxOptions) (*Bubblewrap, error) { return nil, errLinuxOnly }

// Landlock confines commands with Landlock on Linux; elsewhere it cannot
// be made.
type Landlock struct{ Unconfined }

// NewLandlock fails on this platform.
func NewLandlock(o *SandboxOptions) (*Landlock, error) { return nil, errLinuxOnly }

// RunHelper returns at once: there is no helper on this platform.
func RunHelper() {}
