package exec

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
)

// SandboxOptions is the policy of a confined context. The zero value of
// every field but Workspace is the strict default.
type SandboxOptions struct {
	// Workspace is the directory processes may read and write; commands
	// must run inside it. Required.
	Workspace string
	// Read lists more directories or files processes may read (a
	// toolchain under the home directory, say). System directories
	// (SystemDirs) are always readable.
	Read []string
	// Write lists more directories processes may write (a build cache).
	Write []string
	// Network lets processes use the network. Without it they have
	// none: no sockets to other machines nor to this one's services.
	Network bool
	// Hosts, when Network is false, lets processes reach these hosts and
	// no others: names or addresses ("example.com", "10.0.0.1"), or
	// "*.example.com" for every subdomain. They reach them through an
	// HTTP proxy rein runs outside the sandbox, which a forwarder inside
	// serves on the loopback ProxyPort; every process's environment gets
	// HTTP_PROXY and HTTPS_PROXY (and their lower-case forms) pointing
	// at it. Requests for other hosts are refused and logged.
	Hosts []string
	// Logger receives what the sandbox refuses (a host not in Hosts);
	// nil discards it.
	Logger *slog.Logger
}

// SystemDirs are the directories a confined process may read (never
// write): programs, libraries and the system's configuration.
var SystemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt"}

// maskedFiles are system files no tool needs to read.
var maskedFiles = []string{"/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-"}

// ErrNoSandbox is returned by NewSandbox when the machine offers no
// confinement rein can use.
var ErrNoSandbox = errors.New("exec: no sandbox is available (install bubblewrap, or use a kernel with Landlock)")

// helperReady records that this program calls RunHelper, so its binary,
// re-executed, acts as a helper rather than running its main with a
// helper's arguments.
var helperReady atomic.Bool

// selfHelper returns the running binary, for a context whose helper it
// is, or says why it cannot serve.
func selfHelper(context string) (string, error) {
	if !helperReady.Load() {
		return "", fmt.Errorf("exec: %s re-executes this program as its helper, and the program does not call exec.RunHelper; call it first thing in main (and in TestMain)", context)
	}
	self, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("exec: %s needs the running binary to re-execute: %w", context, err)
	}
	return self, nil
}

// sandboxBase is what both confined contexts share: the resolved
// policy, the private temporary directory and the running processes.
type sandboxBase struct {
	ws, tmp string
	read    []string
	write   []string
	net     bool
	hosts   []string
	proxy   *hostProxy // with hosts: rein's end of the allow-list
	ps      procs
}

// check says what is wrong with the policy itself, whatever the
// machine offers.
func (o *SandboxOptions) check() error {
	if o == nil || o.Workspace == "" {
		return errors.New("exec: SandboxOptions.Workspace is empty; give the directory commands may change")
	}
	if o.Network && len(o.Hosts) > 0 {
		return errors.New("exec: the network is allowed to every host and to a list of hosts at once; give one or the other")
	}
	return checkHosts(o.Hosts)
}

func newSandboxBase(o *SandboxOptions) (*sandboxBase, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	ws, err := realDir(o.Workspace)
	if err != nil {
		return nil, fmt.Errorf("exec: workspace: %w", err)
	}
	b := &sandboxBase{ws: ws, net: o.Network, hosts: o.Hosts}
	for _, p := range o.Read {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			b.read = append(b.read, r)
		}
	}
	for _, p := range o.Write {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			b.write = append(b.write, r)
		}
	}
	if b.tmp, err = os.MkdirTemp("", "rein-sandbox-"); err != nil {
		return nil, fmt.Errorf("exec: private temporary directory: %w", err)
	}
	if len(o.Hosts) > 0 {
		if b.proxy, err = newHostProxy(o.Hosts, o.Logger); err != nil {
			os.RemoveAll(b.tmp)
			return nil, err
		}
	}
	return b, nil
}

// proxyEnv points a process at the proxy forwarder.
var proxyEnv = func() []string {
	url := "http://127.0.0.1:" + strconv.Itoa(ProxyPort)
	return []string{"HTTP_PROXY=" + url, "HTTPS_PROXY=" + url, "http_proxy=" + url, "https_proxy=" + url}
}()

// info describes a confined context named name.
func (b *sandboxBase) info(name string, confined bool) Info {
	return Info{Name: name, Confined: confined, Network: b.net, Hosts: b.hosts}
}

func realDir(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	r, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", err
	}
	st, err := os.Stat(r)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		return "", fmt.Errorf("%s is not a directory", p)
	}
	return r, nil
}

// checkDir refuses a working directory outside the workspace.
func (b *sandboxBase) checkDir(dir string) (string, error) {
	r, err := realDir(dir)
	if err != nil {
		return "", fmt.Errorf("exec: working directory: %w", err)
	}
	if r != b.ws && !strings.HasPrefix(r, b.ws+string(filepath.Separator)) {
		return "", fmt.Errorf("exec: working directory %s is outside the workspace %s; run commands inside it", dir, b.ws)
	}
	return r, nil
}

// env is req's environment with the private temporary directory as
// TMPDIR and HOME (the real home is out of reach), and PWD set to dir
// when req sets none.
func (b *sandboxBase) env(req *StartRequest, tmp, dir string) []string {
	out := make([]string, 0, len(req.Env)+3)
	pwd := false
	for _, kv := range req.Env {
		if strings.HasPrefix(kv, "TMPDIR=") || strings.HasPrefix(kv, "HOME=") {
			continue
		}
		pwd = pwd || strings.HasPrefix(kv, "PWD=")
		out = append(out, kv)
	}
	if !pwd {
		out = append(out, "PWD="+dir)
	}
	if b.proxy != nil {
		out = append(out, proxyEnv...)
	}
	return append(out, "TMPDIR="+tmp, "HOME="+tmp)
}

func (b *sandboxBase) close() error {
	b.ps.close()
	if b.proxy != nil {
		b.proxy.Close()
	}
	return os.RemoveAll(b.tmp)
}
