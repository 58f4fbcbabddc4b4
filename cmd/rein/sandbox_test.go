package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/reinhq/rein/session"
	"github.com/reinhq/rein/tool/exec"
)

// noSandbox is a machine that offers no sandbox.
func noSandbox(*exec.SandboxOptions) (exec.Context, error) {
	return nil, errors.Join(exec.ErrNoSandbox, errors.New("exec: bwrap is not installed"))
}

func TestNoSandboxRefusesAutoApproval(t *testing.T) {
	var stderr bytes.Buffer
	a := &app{stderr: &stderr, getenv: func(string) string { return "" }, secrets: newScrubber(), newSandbox: noSandbox}
	shellOnly := []string{"shell"}
	_, err := a.shellBox(&sandboxFlags{}, t.TempDir(), "auto", shellOnly)
	var ue *usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "--sandbox off") {
		t.Fatalf("--approve auto without a sandbox: %v, want a usage error naming --sandbox off", err)
	}

	box, err := a.shellBox(&sandboxFlags{}, t.TempDir(), "ask", shellOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer box.ctx.Close()
	if box.ctx.Info().Confined || !strings.Contains(stderr.String(), "no sandbox") {
		t.Errorf("asking: context %+v, stderr %q; want unconfined, said once", box.ctx.Info(), stderr.String())
	}
	if r := box.records(); len(r) != 1 || !strings.Contains(r[0].(*session.SessionMeta).Value, "unconfined") {
		t.Errorf("records = %v, want one saying commands run unconfined", r)
	}
	if r := box.records(); r != nil {
		t.Errorf("records a second time = %v, want none", r)
	}

	off, err := a.shellBox(&sandboxFlags{mode: "off"}, t.TempDir(), "auto", shellOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer off.ctx.Close()
	if r := off.records(); len(r) != 1 || !strings.Contains(r[0].(*session.SessionMeta).Value, "--sandbox off") {
		t.Errorf("--sandbox off records = %v, want it named", r)
	}
	if _, err := a.shellBox(&sandboxFlags{mode: "docker"}, t.TempDir(), "ask", shellOnly); err == nil || !strings.Contains(err.Error(), "auto, bubblewrap, landlock, off") {
		t.Errorf("--sandbox docker = %v, want the choices", err)
	}
	if box, err := a.shellBox(&sandboxFlags{}, t.TempDir(), "auto", []string{"read"}); box != nil || err != nil {
		t.Errorf("without the shell: %v, %v; want nothing to make", box, err)
	}
}

func TestSandboxAllowHostFlags(t *testing.T) {
	var stderr bytes.Buffer
	a := &app{stderr: &stderr, getenv: func(string) string { return "" }, secrets: newScrubber(), newSandbox: noSandbox}
	shellOnly := []string{"shell"}
	for _, tc := range []struct {
		f    sandboxFlags
		want string
	}{
		{sandboxFlags{network: true, hosts: []string{"example.com"}}, "give one of them"},
		{sandboxFlags{mode: "off", hosts: []string{"example.com"}}, "needs a sandbox"},
		{sandboxFlags{hosts: []string{"example.com"}}, "needs a sandbox, and there is none here"},
	} {
		_, err := a.shellBox(&tc.f, t.TempDir(), "ask", shellOnly)
		var ue *usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want a usage error saying %q", tc.f, err, tc.want)
		}
	}
	a.newSandbox = nil // the machine's own
	if _, err := a.shellBox(&sandboxFlags{hosts: []string{"https://example.com/x"}}, t.TempDir(), "ask", shellOnly); err == nil || !strings.Contains(err.Error(), "no scheme, port or path") {
		t.Errorf("a URL as a host: %v, want an error saying what a host is", err)
	}
}
