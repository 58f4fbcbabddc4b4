//go:build linux

package sandbox

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
)

const secretText = "TOP SECRET"

// fixture builds base/outside (a secret) and base/ws (the workspace) with
// every kind of escape route in place.
func fixture(t *testing.T) (p *Policy, ws, outside string) {
	t.Helper()
	base := t.TempDir()
	ws = filepath.Join(base, "ws")
	outside = filepath.Join(base, "outside")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(ws, "dir", "sub"), 0o755))
	must(os.MkdirAll(filepath.Join(ws, "private"), 0o755))
	must(os.MkdirAll(outside, 0o755))
	must(os.WriteFile(filepath.Join(outside, "secret.txt"), []byte(secretText), 0o644))
	must(os.WriteFile(filepath.Join(ws, "file.txt"), []byte("inside"), 0o644))
	must(os.WriteFile(filepath.Join(ws, ".env"), []byte("API_KEY=x"), 0o644))
	must(os.WriteFile(filepath.Join(ws, "private", "x"), []byte("private"), 0o644))
	links := map[string]string{
		"out":          "../outside",
		"outabs":       outside,
		"outfile":      "../outside/secret.txt",
		"chain1":       "chain2",
		"chain2":       "chain3",
		"chain3":       "../outside",
		"dir/up":       "../../outside",
		"dir/sub/up2":  "../../../outside/secret.txt",
		"zero":         "/dev/zero",
		"dir/null":     "/dev/null",
		"loop":         "loop",
		"inlink":       "file.txt",
		"privlink":     "private/x",
		"envlink":      ".env",
		"proc":         "/proc/self/root",
		"procrel":      "../../../../../../../../proc/self/root/etc/passwd",
		"parent":       base,
		"dotdot":       "..",
		"dir/absinner": filepath.Join(ws, "dir", "..", "..", "outside"),
	}
	for name, target := range links {
		must(os.Symlink(target, filepath.Join(ws, name)))
	}
	must(syscall.Mkfifo(filepath.Join(ws, "fifo"), 0o644))
	p = &Policy{Root: ws, Deny: []string{"private"}}
	return p, ws, outside
}

func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		b.WriteString(path + "\n")
		if d != nil && d.Type().IsRegular() {
			data, _ := os.ReadFile(path)
			b.Write(data)
		}
		return nil
	})
	return b.String()
}

func refused(err error) bool {
	return errors.Is(err, ErrOutside) || errors.Is(err, ErrDenied) || errors.Is(err, ErrReadOnly) || errors.Is(err, ErrNeedsApproval)
}

// TestB53_PathEscapeCorpus tries every escape route through every method
// and counts the refusals; all must be refused, and the outside directory
// must be unchanged afterwards.
func TestB53_PathEscapeCorpus(t *testing.T) {
	for _, walk := range []bool{false, true} {
		name := "openat2"
		if walk {
			name = "openat-walk"
		}
		t.Run(name, func(t *testing.T) {
			forceWalk = walk
			defer func() { forceWalk = false }()
			runEscapeCorpus(t)
		})
	}
}

func runEscapeCorpus(t *testing.T) {
	p, ws, outside := fixture(t)
	before := snapshot(t, outside)
	read := func(path string) func() error {
		return func() error {
			f, err := p.Open(path, os.O_RDONLY, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			data, _ := io.ReadAll(io.LimitReader(f, 64))
			return errors.New("opened, read " + string(data))
		}
	}
	write := func(path string) func() error {
		return func() error {
			f, err := p.Open(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			f.Write([]byte("pwned"))
			f.Close()
			return errors.New("opened for writing")
		}
	}
	stat := func(path string) func() error {
		return func() error { _, err := p.Stat(path); return orOpened(err) }
	}
	list := func(path string) func() error {
		return func() error { _, err := p.ReadDir(path); return orOpened(err) }
	}
	mkdir := func(path string) func() error { return func() error { return orOpened(p.MkdirAll(path, 0o755)) } }
	remove := func(path string) func() error { return func() error { return orOpened(p.Remove(path)) } }
	rename := func(a, b string) func() error { return func() error { return orOpened(p.Rename(a, b)) } }
	ro := &Policy{Root: ws, ReadOnly: true}

	attempts := []struct {
		name string
		try  func() error
	}{
		{"dotdot relative", read("../outside/secret.txt")},
		{"deep dotdot", read("../../../../../../etc/passwd")},
		{"absolute elsewhere", read("/etc/passwd")},
		{"absolute outside sibling", read(filepath.Join(outside, "secret.txt"))},
		{"absolute through root dotdot", read(ws + "/../outside/secret.txt")},
		{"dotdot after dir", read("dir/../../outside/secret.txt")},
		{"dot then dotdot", read("./../outside/secret.txt")},
		{"symlinked dir relative", read("out/secret.txt")},
		{"symlinked dir absolute", read("outabs/secret.txt")},
		{"symlinked file", read("outfile")},
		{"symlink chain", read("chain1/secret.txt")},
		{"nested symlink up", read("dir/up/secret.txt")},
		{"deeper symlink up", read("dir/sub/up2")},
		{"symlink to dotdot", read("dotdot/outside/secret.txt")},
		{"symlink absolute with dotdot inside", read("dir/absinner/secret.txt")},
		{"symlink to base", read("parent/outside/secret.txt")},
		{"magic link proc root", read("proc/etc/passwd")},
		{"relative to proc root", read("procrel")},
		{"device via symlink", read("zero")},
		{"dev null via nested symlink", write("dir/null")},
		{"device absolute", read("/dev/zero")},
		{"fifo read", read("fifo")},
		{"fifo write", write("fifo")},
		{"fullwidth solidus", read("..\uFF0Foutside\uFF0Fsecret.txt")},
		{"fullwidth full stop", read("\uFF0E\uFF0E/outside/secret.txt")},
		{"one dot leader", read("\u2024\u2024/outside/secret.txt")},
		{"two dot leader", read("\u2025/outside/secret.txt")},
		{"division slash", read("..\u2215outside\u2215secret.txt")},
		{"fraction slash", read("..\u2044outside")},
		{"small full stop", read("\uFE52\uFE52/outside")},
		{"zero width space", read("\u200b../outside/secret.txt")},
		{"bidi override", read("..\u202e/outside")},
		{"nul byte", read("file.txt\x00/../../outside")},
		{"control char", read("..\n/outside")},
		{"write through symlinked dir", write("out/new.txt")},
		{"overwrite through symlinked file", write("outfile")},
		{"write dotdot", write("../outside/new.txt")},
		{"create via chain", write("chain1/new.txt")},
		{"stat outside", stat("../outside/secret.txt")},
		{"stat via symlink", stat("out/secret.txt")},
		{"list outside", list("..")},
		{"list symlinked dir", list("out")},
		{"list via chain", list("chain1")},
		{"list absolute", list("/etc")},
		{"mkdir through symlink", mkdir("out/newdir")},
		{"mkdir through nested symlink", mkdir("dir/up/x/y")},
		{"mkdir dotdot", mkdir("../outside/z")},
		{"remove through symlink", remove("out/secret.txt")},
		{"remove dotdot", remove("../outside/secret.txt")},
		{"remove root", remove(".")},
		{"rename into symlinked dir", rename("file.txt", "out/stolen.txt")},
		{"rename out of symlinked dir", rename("out/secret.txt", "got.txt")},
		{"rename dotdot", rename("file.txt", "../outside/x")},
		{"denied dir", read("private/x")},
		{"denied via symlink", read("privlink")},
		{"denied list", list("private")},
		{"secret without approval", read(".env")},
		{"secret via symlink", read("envlink")},
		{"read-only write", func() error {
			f, err := ro.Open("new.txt", os.O_WRONLY|os.O_CREATE, 0o644)
			if err == nil {
				f.Close()
				return errors.New("opened")
			}
			return err
		}},
		{"read-only remove", func() error { return orOpened(ro.Remove("file.txt")) }},
		{"symlink loop", read("loop")},
	}
	denied := 0
	for _, a := range attempts {
		err := a.try()
		switch {
		case err == nil || strings.HasPrefix(err.Error(), "opened") || err == errSucceeded:
			t.Errorf("%s: escaped (%v)", a.name, err)
		case a.name == "symlink loop" && errors.Is(err, syscall.ELOOP):
			denied++
		case !refused(err):
			t.Errorf("%s: error %v does not wrap a sandbox sentinel", a.name, err)
		default:
			denied++
		}
	}
	if after := snapshot(t, outside); after != before {
		t.Errorf("outside directory changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
	if denied != len(attempts) {
		t.Errorf("denied %d of %d escape attempts", denied, len(attempts))
	}
	if len(attempts) < 40 {
		t.Errorf("corpus has %d attempts, want at least 40", len(attempts))
	}
	t.Logf("denied %d/%d escape attempts", denied, len(attempts))
}

var errSucceeded = errors.New("succeeded")

func orOpened(err error) error {
	if err == nil {
		return errSucceeded
	}
	return err
}

// TestB53_SymlinkSwapRace swaps a path between a workspace file and a
// symlink out of the workspace while opening it; the outside content must
// never be read.
func TestB53_SymlinkSwapRace(t *testing.T) {
	for _, walk := range []bool{false, true} {
		t.Run(map[bool]string{false: "openat2", true: "openat-walk"}[walk], func(t *testing.T) {
			forceWalk = walk
			defer func() { forceWalk = false }()
			p, ws, outside := fixture(t)
			os.MkdirAll(filepath.Join(ws, "realdir"), 0o755)
			os.WriteFile(filepath.Join(ws, "realdir", "secret.txt"), []byte("inside"), 0o644)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					tmp := filepath.Join(ws, "tmp-swap")
					os.Remove(tmp)
					if i%2 == 0 {
						os.Symlink(outside, tmp)
					} else {
						os.Symlink("realdir", tmp)
					}
					os.Rename(tmp, filepath.Join(ws, "swap"))
					ftmp := filepath.Join(ws, "tmp-fswap")
					os.Remove(ftmp)
					if i%2 == 0 {
						os.Symlink(filepath.Join(outside, "secret.txt"), ftmp)
					} else {
						os.WriteFile(ftmp, []byte("inside"), 0o644)
					}
					os.Rename(ftmp, filepath.Join(ws, "fswap"))
				}
			}()
			opened := 0
			for i := 0; i < 3000; i++ {
				for _, name := range []string{"swap/secret.txt", "fswap"} {
					f, err := p.Open(name, os.O_RDONLY, 0)
					if err != nil {
						continue
					}
					data, _ := io.ReadAll(f)
					f.Close()
					opened++
					if string(data) == secretText {
						t.Fatalf("read the outside secret through %s on attempt %d", name, i)
					}
				}
			}
			close(stop)
			wg.Wait()
			t.Logf("opened the inside file %d times, never the outside one", opened)
		})
	}
}

// TestHardLinkRefused: a hard link made inside the workspace to a file
// outside it is neither read nor written through; its name can still be
// listed, stat'ed and removed, and AllowHardLinks opens it.
func TestHardLinkRefused(t *testing.T) {
	p, ws, outside := fixture(t)
	if err := os.Link(filepath.Join(outside, "secret.txt"), filepath.Join(ws, "hard")); err != nil {
		t.Skipf("cannot make a hard link here: %v", err)
	}
	for _, flag := range []int{os.O_RDONLY, os.O_WRONLY | os.O_TRUNC, os.O_RDWR | os.O_APPEND} {
		if f, err := p.Open("hard", flag, 0); !errors.Is(err, ErrDenied) || err == nil || !strings.Contains(err.Error(), "hard link") {
			if f != nil {
				f.Close()
			}
			t.Errorf("Open(hard, %#x) = %v, want ErrDenied naming the hard link", flag, err)
		}
	}
	if _, err := p.ReadFile("hard", nil, 0); !errors.Is(err, ErrDenied) {
		t.Errorf("ReadFile(hard) = %v, want ErrDenied", err)
	}
	if b, _ := os.ReadFile(filepath.Join(outside, "secret.txt")); string(b) != secretText {
		t.Errorf("the outside file changed: %q", b)
	}
	fi, err := p.Stat("hard")
	if err != nil {
		t.Fatal(err)
	}
	if n := fi.Sys().(*syscall.Stat_t).Nlink; n < 2 {
		t.Errorf("Nlink = %d, want >= 2 so callers can tell", n)
	}
	allow := &Policy{Root: ws, AllowHardLinks: true}
	if b, err := allow.ReadFile("hard", nil, 0); err != nil || string(b) != secretText {
		t.Errorf("with AllowHardLinks, ReadFile(hard) = %q, %v", b, err)
	}
	if err := p.Remove("hard"); err != nil {
		t.Errorf("Remove(hard) = %v; removing the name inside is harmless", err)
	}
}

func TestPolicyInsideOperations(t *testing.T) {
	for _, walk := range []bool{false, true} {
		forceWalk = walk
		p, ws, _ := fixture(t)
		data := func(name string) string {
			f, err := p.Open(name, os.O_RDONLY, 0)
			if err != nil {
				t.Fatalf("Open(%s): %v", name, err)
			}
			defer f.Close()
			b, _ := io.ReadAll(f)
			return string(b)
		}
		if got := data("file.txt"); got != "inside" {
			t.Errorf("file.txt = %q", got)
		}
		if got := data("inlink"); got != "inside" {
			t.Errorf("inlink = %q", got)
		}
		if got := data(filepath.Join(ws, "dir", "..", "file.txt")); got != "inside" {
			t.Errorf("absolute inside = %q", got)
		}
		f, err := p.OpenApproved(".env", os.O_RDONLY, 0)
		if err != nil {
			t.Fatalf("OpenApproved(.env): %v", err)
		}
		f.Close()
		if err := p.MkdirAll("a/b/c", 0o755); err != nil {
			t.Fatal(err)
		}
		w, err := p.Open("a/b/c/new.txt", os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		w.WriteString("new")
		w.Close()
		if err := p.Rename("a/b/c/new.txt", "a/moved.txt"); err != nil {
			t.Fatal(err)
		}
		if got := data("a/moved.txt"); got != "new" {
			t.Errorf("moved = %q", got)
		}
		ents, err := p.ReadDir("a")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		if !sort.StringsAreSorted(names) || strings.Join(names, ",") != "b,moved.txt" {
			t.Errorf("ReadDir(a) = %v", names)
		}
		if err := p.Remove("a/moved.txt"); err != nil {
			t.Fatal(err)
		}
		if _, err := p.Stat("a/moved.txt"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Stat after Remove = %v, want not exist", err)
		}
		if fi, err := p.Stat("."); err != nil || !fi.IsDir() {
			t.Errorf("Stat(.) = %v, %v", fi, err)
		}
		if err := p.MkdirAll("file.txt/x", 0o755); err == nil {
			t.Errorf("MkdirAll through a file succeeded")
		}
	}
	forceWalk = false
}

func TestErrorMessages(t *testing.T) {
	p, ws, _ := fixture(t)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"outside", openErr(p, "../x"), "path ../x is outside the workspace " + ws + "; use a path inside it"},
		{"symlink", openErr(p, "out/secret.txt"), "path out/secret.txt is outside the workspace " + ws + "; use a path inside it"},
		{"denied", openErr(p, "private/x"), `path private/x is denied by the workspace policy (rule "private"); leave it alone or ask the user`},
		{"secret", openErr(p, ".env"), ".env looks like a secrets file; reading it needs the user's approval, ask them first"},
		{"fifo", openErr(p, "fifo"), "fifo is not a regular file (a device, FIFO or socket); only regular files can be read or written"},
		{"lookalike", openErr(p, "..\uFF0Fx"), `path "..／x" contains U+FF0F, which looks like a path separator or dot; use a plain path inside the workspace ` + ws},
	}
	for _, tt := range tests {
		if tt.err == nil || tt.err.Error() != tt.want {
			t.Errorf("%s: error = %v\nwant %s", tt.name, tt.err, tt.want)
		}
	}
}

func openErr(p *Policy, name string) error {
	f, err := p.Open(name, os.O_RDONLY, 0)
	if f != nil {
		f.Close()
	}
	return err
}

func TestClassify(t *testing.T) {
	p, _, _ := fixture(t)
	for name, want := range map[string]Class{
		".env": Secret, "envlink": Secret, "config/.env.local": Secret, "keys/server.pem": Secret,
		"home/.aws/credentials": Secret, "id_ed25519.pub": Secret, "file.txt": Normal, "main.go": Normal,
		"environment.go": Normal,
	} {
		if got := p.Classify(name); got != want {
			t.Errorf("Classify(%s) = %v, want %v", name, got, want)
		}
	}
}

func TestMatch(t *testing.T) {
	tests := []struct {
		pat, name string
		want      bool
	}{
		{"**/*.go", "a/b/c.go", true},
		{"**/*.go", "c.go", true},
		{"a/**/c", "a/c", true},
		{"a/**/c", "a/x/y/c", true},
		{"a/*/c", "a/x/y/c", false},
		{"*.go", "a/b.go", false},
		{"src/**", "src/a/b", true},
		{"[", "[", false},
	}
	for _, tt := range tests {
		if got := Match(tt.pat, tt.name); got != tt.want {
			t.Errorf("Match(%q, %q) = %v, want %v", tt.pat, tt.name, got, tt.want)
		}
	}
}

func TestReadFile(t *testing.T) {
	for _, walk := range []bool{false, true} {
		forceWalk = walk
		p, _, _ := fixture(t)
		data, err := p.ReadFile("inlink", nil, 0)
		if err != nil || string(data) != "inside" {
			t.Errorf("ReadFile(inlink) = %q, %v", data, err)
		}
		buf := make([]byte, 0, 64)
		data, err = p.ReadFile("file.txt", buf, 100)
		if err != nil || string(data) != "inside" || &data[:1][0] != &buf[:1][0] {
			t.Errorf("ReadFile reusing buf = %q, %v (reused: %v)", data, err, err == nil && &data[:1][0] == &buf[:1][0])
		}
		if _, err := p.ReadFile("file.txt", nil, 3); !errors.Is(err, ErrTooLarge) {
			t.Errorf("ReadFile over limit = %v, want ErrTooLarge", err)
		}
		for _, name := range []string{"../outside/secret.txt", "out/secret.txt", "outfile", "chain1/secret.txt", "zero", "fifo", ".env", "privlink", "dir", "loop"} {
			data, err := p.ReadFile(name, nil, 0)
			if err == nil || strings.Contains(string(data), secretText) {
				t.Errorf("ReadFile(%s) = %q, %v; want a refusal", name, data, err)
			}
		}
	}
	forceWalk = false
}

func BenchmarkPolicyReadFile(b *testing.B) {
	dir := b.TempDir()
	os.MkdirAll(filepath.Join(dir, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(dir, "a", "b", "c.go"), []byte("package b\n"), 0o644)
	p := &Policy{Root: dir}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		data, err := p.ReadFile("a/b/c.go", buf, 0)
		if err != nil {
			b.Fatal(err)
		}
		buf = data[:0]
	}
}

func FuzzRel(f *testing.F) {
	f.Add("a/../../b")
	f.Add("/x/../y")
	f.Fuzz(func(t *testing.T, name string) {
		p := &Policy{Root: "/ws"}
		p.once.Do(func() { p.rootAbs, p.rootReal = "/ws", "/ws" })
		rel, err := p.Rel(name)
		if err != nil {
			return
		}
		if rel == ".." || strings.HasPrefix(rel, "../") || strings.HasPrefix(rel, "/") {
			t.Fatalf("Rel(%q) = %q escapes the root", name, rel)
		}
	})
}
