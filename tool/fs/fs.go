package fs

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"sync"
	"time"

	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/sandbox"
)

// Options configure the filesystem tools. A nil *Options and zero fields
// mean the documented defaults.
type Options struct {
	// State is the read-state the tools share. Nil makes a new one; pass
	// the same State to tool sets that should share it.
	State *ReadState
	// MaxReadBytes is the largest file read whole without offset/limit
	// (default 256 KiB); larger files must be read in ranges.
	MaxReadBytes int64
	// MaxFileBytes is the largest file any tool reads at all, for edits,
	// hashing and grep (default 64 MiB).
	MaxFileBytes int64
	// MaxImageBytes is the largest image returned as an image (default 5 MiB).
	MaxImageBytes int64
	// DefaultLines is how many lines read returns without a limit (default 2000).
	DefaultLines int
	// MaxLineLength truncates longer lines in read and grep output (default 2000).
	MaxLineLength int
	// MaxOutputBytes bounds the text one read returns (default 100 000).
	MaxOutputBytes int
	// MaxEntries bounds ls and glob listings and grep file lists (default 200).
	MaxEntries int
	// MaxMatches bounds grep content lines (default 250).
	MaxMatches int
	// ApproveSecret is asked before a secret file (sandbox.Secret) is
	// read; nil refuses such reads with the policy's message.
	ApproveSecret func(ctx context.Context, path string) bool
}

func (o *Options) withDefaults() Options {
	var v Options
	if o != nil {
		v = *o
	}
	def := func(p *int64, d int64) {
		if *p <= 0 {
			*p = d
		}
	}
	defInt := func(p *int, d int) {
		if *p <= 0 {
			*p = d
		}
	}
	def(&v.MaxReadBytes, 256<<10)
	def(&v.MaxFileBytes, 64<<20)
	def(&v.MaxImageBytes, 5<<20)
	defInt(&v.DefaultLines, 2000)
	defInt(&v.MaxLineLength, 2000)
	defInt(&v.MaxOutputBytes, 100_000)
	defInt(&v.MaxEntries, 200)
	defInt(&v.MaxMatches, 250)
	if v.State == nil {
		v.State = NewReadState()
	}
	return v
}

// tools holds what the filesystem tools share: the policy, the options
// and the read-state.
type tools struct {
	p     *sandbox.Policy
	o     Options
	state *ReadState
	files Files // where writes go; nil is the OS
}

// NewTools returns the tools read, write, edit, multi_edit, ls, glob and
// grep, confined by policy and sharing one ReadState.
func NewTools(policy *sandbox.Policy, opts *Options) []tool.Tool {
	o := opts.withDefaults()
	t := &tools{p: policy, o: o, state: o.State}
	writer := func(build func(*tools) *tool.Func) tool.Tool {
		return &fileTool{Func: build(t), t: t, build: build}
	}
	return []tool.Tool{
		t.readTool(), writer((*tools).writeTool), writer((*tools).editTool), writer((*tools).multiEditTool),
		t.lsTool(), t.globTool(), t.grepTool(),
	}
}

// fingerprint identifies one version of a file's content.
type fingerprint struct {
	size    int64
	modTime time.Time
	sum     [sha256.Size]byte
}

type fileState struct {
	seen fingerprint // the version the model last saw or wrote
	// The last read, for the "unchanged" reply; cleared by writes so the
	// model sees a file it changed when it reads it again.
	readValid           bool
	readOffset, readLim int
}

// ReadState remembers, per session, which file versions the model has
// read. Edits need a prior read of the same version (B54), and a repeated
// read of an unchanged range gets a short note instead of the content
// (B55). It is safe for concurrent use.
type ReadState struct {
	mu       sync.Mutex
	sessions map[string]map[string]*fileState
}

// NewReadState returns an empty read-state.
func NewReadState() *ReadState {
	return &ReadState{sessions: make(map[string]map[string]*fileState)}
}

// Forget drops everything remembered for session.
func (s *ReadState) Forget(session string) {
	s.mu.Lock()
	delete(s.sessions, session)
	s.mu.Unlock()
}

func (s *ReadState) get(session, rel string) (fileState, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.sessions[session][rel]; ok {
		return *st, true
	}
	return fileState{}, false
}

func (s *ReadState) put(session, rel string, st fileState) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.sessions[session]
	if m == nil {
		m = make(map[string]*fileState)
		s.sessions[session] = m
	}
	m[rel] = &st
}

// pathError turns a policy or OS error into the model-facing result.
func pathError(name string, err error) *tool.Result {
	var se *sandbox.Error
	switch {
	case errors.As(err, &se):
		return tool.Errorf("%s", se.Reason)
	case errors.Is(err, iofs.ErrNotExist):
		return tool.Errorf("%s does not exist; check the path (ls or glob can help)", name)
	case errors.Is(err, iofs.ErrPermission):
		return tool.Errorf("permission denied for %s", name)
	}
	var pe *os.PathError
	if errors.As(err, &pe) {
		return tool.Errorf("%s: %v", name, pe.Err)
	}
	return tool.Errorf("%s: %v", name, err)
}

func schema(s string) json.RawMessage { return json.RawMessage(s) }

func humanSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
