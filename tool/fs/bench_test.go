package fs

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/sandbox"
)

var (
	treeOnce sync.Once
	treeDir  string
	treeErr  error
)

// benchTree generates 50 000 small source files in 500 directories once
// per process; 50 of them hold the needle.
func benchTree(b *testing.B) string {
	treeOnce.Do(func() {
		treeDir, treeErr = os.MkdirTemp("", "rein-grep-bench")
		if treeErr != nil {
			return
		}
		var body strings.Builder
		for i := 0; i < 40; i++ {
			fmt.Fprintf(&body, "func f%d(x int) int { return x * %d } // some ordinary source text\n", i, i)
		}
		plain := body.String()
		for d := 0; d < 500; d++ {
			dir := filepath.Join(treeDir, fmt.Sprintf("pkg%03d", d/50), fmt.Sprintf("sub%03d", d))
			if treeErr = os.MkdirAll(dir, 0o755); treeErr != nil {
				return
			}
			for f := 0; f < 100; f++ {
				content := plain
				if (d*100+f)%1000 == 7 {
					content += fmt.Sprintf("var needle_%d = true\n", d*100+f)
				}
				if treeErr = os.WriteFile(filepath.Join(dir, fmt.Sprintf("file%03d.go", f)), []byte(content), 0o644); treeErr != nil {
					return
				}
			}
		}
	})
	if treeErr != nil {
		b.Fatal(treeErr)
	}
	return treeDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if treeDir != "" {
		os.RemoveAll(treeDir)
	}
	os.Exit(code)
}

// BenchmarkGrep50k searches 50 000 files for a regexp with the grep tool
// and, side by side, with grep -r and rg when they are installed.
func BenchmarkGrep50k(b *testing.B) {
	dir := benchTree(b)
	const pattern = `needle_[0-9]+`
	b.Run("rein", func(b *testing.B) {
		var grep tool.Tool
		for _, tl := range NewTools(&sandbox.Policy{Root: dir}, nil) {
			if tl.Spec().Name == "grep" {
				grep = tl
			}
		}
		args := json.RawMessage(`{"pattern":"` + pattern + `"}`)
		for b.Loop() {
			res, err := grep.Call(context.Background(), &tool.Call{Name: "grep", Args: args})
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
			if n := strings.Count(render(res), "\n") + 1; n != 50 {
				b.Fatalf("found %d files, want 50", n)
			}
		}
	})
	for _, ext := range []struct {
		name, bin string
		args      []string
	}{
		{"grep-r", "grep", []string{"-rlE", pattern, "."}},
		{"rg", "rg", []string{"-l", pattern, "."}},
	} {
		b.Run(ext.name, func(b *testing.B) {
			bin, err := exec.LookPath(ext.bin)
			if err != nil {
				b.Skipf("%s is not installed", ext.bin)
			}
			for b.Loop() {
				cmd := exec.Command(bin, ext.args...)
				cmd.Dir = dir
				out, err := cmd.Output()
				if err != nil {
					b.Fatal(err)
				}
				if n := strings.Count(string(out), "\n"); n != 50 {
					b.Fatalf("found %d files, want 50", n)
				}
			}
		})
	}
}

// BenchmarkReadLarge reads 2000 lines from the middle of a 100 000-line
// (about 6 MB) file; every read hashes the whole file for the read-state.
func BenchmarkReadLarge(b *testing.B) {
	dir := b.TempDir()
	var content strings.Builder
	for i := 0; i < 100_000; i++ {
		fmt.Fprintf(&content, "line %d: the quick brown fox jumps over the lazy dog\n", i)
	}
	os.WriteFile(filepath.Join(dir, "big.txt"), []byte(content.String()), 0o644)
	st := NewReadState()
	var read tool.Tool
	for _, tl := range NewTools(&sandbox.Policy{Root: dir}, &Options{State: st}) {
		if tl.Spec().Name == "read" {
			read = tl
		}
	}
	args := json.RawMessage(`{"path":"big.txt","offset":50000,"limit":2000}`)
	b.SetBytes(int64(content.Len()))
	b.ReportAllocs()
	for b.Loop() {
		st.Forget("s")
		res, err := read.Call(context.Background(), &tool.Call{Name: "read", Args: args, Session: "s"})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}
