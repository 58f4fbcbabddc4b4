package exec

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ProxyPort is the loopback port, inside a sandbox with allowed hosts,
// where rein's proxy answers; HTTP_PROXY and HTTPS_PROXY point at it.
const ProxyPort = 3128

// hostProxy is the HTTP proxy rein runs outside a sandbox whose
// commands may reach only some hosts: plain requests in absolute form
// and CONNECT tunnels to an allowed host go through, every other is
// refused with 403 and logged. It listens on a Unix socket in a
// directory of its own, which the sandbox's forwarder reaches.
type hostProxy struct {
	hosts []string
	log   *slog.Logger
	dir   string
	sock  string
	ln    net.Listener
	srv   *http.Server
	rp    *httputil.ReverseProxy
	wg    sync.WaitGroup // the server and the tunnels

	mu    sync.Mutex
	conns map[net.Conn]struct{} // both ends of the open tunnels
}

// checkHosts says what is wrong with an allow-list entry, or nil.
func checkHosts(hosts []string) error {
	for _, h := range hosts {
		name := strings.TrimPrefix(h, "*.")
		if name == "" || strings.ContainsAny(name, "/:*@ ") {
			return fmt.Errorf("exec: allowed host %q: give a host name or address (example.com, *.example.com, 10.0.0.1), no scheme, port or path", h)
		}
	}
	return nil
}

func newHostProxy(hosts []string, log *slog.Logger) (*hostProxy, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	dir, err := os.MkdirTemp("", "rein-proxy-")
	if err != nil {
		return nil, fmt.Errorf("exec: proxy directory: %w", err)
	}
	p := &hostProxy{hosts: hosts, log: log, dir: dir, sock: filepath.Join(dir, "proxy.sock"), conns: map[net.Conn]struct{}{}}
	if p.ln, err = net.Listen("unix", p.sock); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("exec: proxy socket: %w", err)
	}
	p.rp = &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.Out.URL, r.Out.Host = r.In.URL, ""
	}, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.srv.Serve(p.ln)
	}()
	return p, nil
}

// allowed reports whether host (a name or an address, no port) is on
// the list: an exact entry, or *.domain for domain's subdomains.
func (p *hostProxy) allowed(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, h := range p.hosts {
		h = strings.ToLower(h)
		if d, ok := strings.CutPrefix(h, "*."); ok {
			if strings.HasSuffix(host, "."+d) {
				return true
			}
		} else if host == strings.Trim(h, "[]") {
			return true
		}
	}
	return false
}

func (p *hostProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	host := r.URL.Hostname()
	if r.Method == http.MethodConnect {
		host, _, _ = net.SplitHostPort(r.Host)
	}
	if host == "" || (r.Method != http.MethodConnect && !r.URL.IsAbs()) {
		http.Error(w, "rein sandbox proxy: send requests in absolute form (http://host/path) or CONNECT host:port", http.StatusBadRequest)
		return
	}
	if !p.allowed(host) {
		p.log.Warn("sandbox: connection refused: the host is not allowed", "host", host, "method", r.Method)
		http.Error(w, "rein sandbox proxy: "+host+" is not an allowed host; allow it with --sandbox-allow-host "+host, http.StatusForbidden)
		return
	}
	if r.Method != http.MethodConnect {
		p.rp.ServeHTTP(w, r)
		return
	}
	p.tunnel(w, r)
}

// tunnel connects to r's host and copies both ways until either side
// closes.
func (p *hostProxy) tunnel(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	var d net.Dialer
	up, err := d.DialContext(ctx, "tcp", r.Host)
	if err != nil {
		http.Error(w, "rein sandbox proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	rc := http.NewResponseController(w)
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		up.Close()
		return
	}
	down, buf, err := rc.Hijack()
	if err != nil {
		up.Close()
		return
	}
	if !p.track(up, down) {
		return
	}
	defer p.untrack(up, down)
	done := make(chan struct{})
	go func() {
		io.Copy(up, buf) // what the client sent after the request, then the rest
		up.(*net.TCPConn).CloseWrite()
		close(done)
	}()
	io.Copy(down, up)
	down.Close()
	<-done
	up.Close()
}

// track records a tunnel's connections so Close can end them; after
// Close it closes them and says no.
func (p *hostProxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns == nil {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	p.wg.Add(1)
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *hostProxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	for _, c := range cs {
		delete(p.conns, c)
	}
	p.mu.Unlock()
	p.wg.Done()
}

// Close stops the proxy, ends its connections and removes its socket.
func (p *hostProxy) Close() error {
	p.srv.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
	return os.RemoveAll(p.dir)
}
