package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool/exec"
	"github.com/spf13/pflag"
)

// sandboxFlags choose where the shell's commands run.
type sandboxFlags struct {
	mode        string
	network     bool
	hosts       []string
	read, write []string
}

var sandboxModes = []string{"auto", "bubblewrap", "landlock", "off"}

func (f *sandboxFlags) register(fl *pflag.FlagSet) {
	fl.StringVar(&f.mode, "sandbox", "", "where shell commands run: auto (the best sandbox here), bubblewrap, landlock, or off (unconfined) (default auto, or $REIN_SANDBOX)")
	fl.BoolVar(&f.network, "sandbox-net", false, "let sandboxed commands use the network")
	fl.StringSliceVar(&f.hosts, "sandbox-allow-host", nil, "a host sandboxed commands may reach through rein's HTTP proxy, and no others (example.com, *.example.com; repeatable or comma-separated)")
	fl.StringArrayVar(&f.read, "sandbox-read", nil, "a directory sandboxed commands may also read (repeatable)")
	fl.StringArrayVar(&f.write, "sandbox-write", nil, "a directory sandboxed commands may also write (repeatable)")
}

// shellBox is the execution context of a run's shell, what the session
// is told about it, and the secrets commands must not see.
type shellBox struct {
	ctx     exec.Context
	secrets []string
	// meta is the session's "sandbox" key: the context's name, or why
	// commands run unconfined.
	meta string
	// record is logged at the first step when commands run unconfined,
	// so the log itself says the shell was not confined.
	record *session.SessionMeta
	// refused gathers the hosts the sandbox's proxy refused.
	refused *refusals
}

// records hands the log the sandbox record once, and every refusal
// since the last step.
func (b *shellBox) records() []session.Payload {
	if b == nil {
		return nil
	}
	out := b.refused.drain()
	if b.record != nil {
		out = append([]session.Payload{b.record}, out...)
		b.record = nil
	}
	return out
}

// refusals is the sandbox's logger: each refusal is said on stderr and
// kept for the session log ("sandbox.refused", the host).
type refusals struct {
	text    slog.Handler
	mu      sync.Mutex
	pending []session.Payload
}

func newRefusals(stderr io.Writer) *refusals {
	return &refusals{text: slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})}
}

func (r *refusals) Enabled(ctx context.Context, l slog.Level) bool { return r.text.Enabled(ctx, l) }
func (r *refusals) WithAttrs([]slog.Attr) slog.Handler             { return r }
func (r *refusals) WithGroup(string) slog.Handler                  { return r }

func (r *refusals) Handle(ctx context.Context, rec slog.Record) error {
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == "host" {
			r.mu.Lock()
			r.pending = append(r.pending, &session.SessionMeta{Key: "sandbox.refused", Value: a.Value.String()})
			r.mu.Unlock()
		}
		return true
	})
	return r.text.Handle(ctx, rec)
}

func (r *refusals) drain() []session.Payload {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.pending
	r.pending = nil
	return out
}

// shellBox makes the shell's execution context for a run in root. With
// no sandbox available it says so on stderr and, under --approve auto,
// refuses to run the shell unless --sandbox off says to run it
// unconfined.
func (a *app) shellBox(f *sandboxFlags, root, approve string, names []string) (*shellBox, error) {
	if !slices.Contains(names, "shell") {
		return nil, nil
	}
	mode := f.mode
	if mode == "" {
		mode = a.getenv("REIN_SANDBOX")
	}
	if mode == "" {
		mode = "auto"
	}
	if !slices.Contains(sandboxModes, mode) {
		return nil, usageErrorf("--sandbox %q: use %s", mode, strings.Join(sandboxModes, ", "))
	}
	if f.network && len(f.hosts) > 0 {
		return nil, usageErrorf("--sandbox-net allows every host and --sandbox-allow-host only some; give one of them")
	}
	box := &shellBox{secrets: a.secrets.list(), refused: newRefusals(a.stderr)}
	opts := &exec.SandboxOptions{Workspace: root, Network: f.network, Hosts: f.hosts, Read: f.read, Write: f.write,
		Logger: slog.New(box.refused)}
	var err error
	switch mode {
	case "off":
		if len(f.hosts) > 0 {
			return nil, usageErrorf("--sandbox-allow-host needs a sandbox; leave out --sandbox off, or the hosts")
		}
		box.ctx = exec.NewUnconfined()
		box.meta = "off (--sandbox off): shell commands run unconfined"
		box.record = &session.SessionMeta{Key: "sandbox", Value: box.meta}
		return box, nil
	case "bubblewrap":
		box.ctx, err = exec.NewBubblewrap(opts)
	case "landlock":
		box.ctx, err = exec.NewLandlock(opts)
	default:
		make := a.newSandbox
		if make == nil {
			make = exec.NewSandbox
		}
		box.ctx, err = make(opts)
	}
	if err == nil {
		info := box.ctx.Info()
		box.meta = describeBox(info)
		if !info.Confined {
			fmt.Fprintf(a.stderr, "rein: the shell's sandbox here (%s) cannot hide other processes: they stay listed in /proc, though out of reach\n", info.Name)
		}
		return box, nil
	}
	if mode != "auto" || !errors.Is(err, exec.ErrNoSandbox) {
		return nil, usageErrorf("--sandbox %s: %v", mode, err)
	}
	if len(f.hosts) > 0 {
		return nil, usageErrorf("--sandbox-allow-host needs a sandbox, and there is none here (%v)", firstLine(err.Error()))
	}
	if approve == "auto" {
		return nil, usageErrorf("the shell cannot be sandboxed here (%v);\n"+
			"with --approve auto it would run every command unconfined. Install bubblewrap, or pass --sandbox off to accept that", err)
	}
	fmt.Fprintf(a.stderr, "rein: no sandbox for the shell here; every command it runs is unconfined and asks for approval (%v)\n", firstLine(err.Error()))
	box.ctx = exec.NewUnconfined()
	box.meta = "none available: shell commands run unconfined"
	box.record = &session.SessionMeta{Key: "sandbox", Value: box.meta}
	return box, nil
}

func describeBox(info exec.Info) string {
	net := "no network"
	if info.Network {
		net = "network allowed"
	} else if len(info.Hosts) > 0 {
		net = "network only to " + strings.Join(info.Hosts, ", ") + " through rein's proxy"
	}
	return info.Name + ", " + net
}

// learnSecrets tells the scrubber every secret the configuration
// points at: the provider keys, whatever variable holds them, the MCP
// servers' headers, credentials and OAuth client secrets, and every
// variable whose name looks like a credential.
func (a *app) learnSecrets() {
	s := a.secrets
	s.learnEnv()
	for _, p := range providers {
		s.add(a.getenv(p.keyEnv))
	}
	if a.cfg != nil {
		for _, pc := range a.cfg.Providers {
			if pc.KeyEnv != "" {
				s.add(a.getenv(pc.KeyEnv))
			}
		}
	}
	mc, err := loadMCPConfig(a.configPath)
	if err != nil {
		return
	}
	expand := func(v string) string { return os.Expand(v, a.getenv) }
	for _, sc := range mc.Servers {
		for _, v := range sc.Headers {
			s.learnHeader(expand(v))
		}
		for k, v := range sc.Env {
			if exec.CredentialName(k) {
				s.add(expand(v))
			}
		}
		if v, ok := sc.OAuth["client_secret"]; ok {
			s.add(expand(v))
		}
	}
}
