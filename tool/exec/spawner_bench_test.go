//go:build linux

package exec

import (
	"context"
	"testing"
)

// BenchmarkStartWarm measures what a command costs once its init is
// ready: the case when commands come apart (a model's turn between
// them). BenchmarkStart measures commands back to back, where each
// also waits for the next init to be started.
func BenchmarkStartWarm(b *testing.B) {
	ws := b.TempDir()
	for _, k := range []struct {
		name string
		make func() (*spawner, func(), error)
	}{
		{"bubblewrap", func() (*spawner, func(), error) {
			c, err := NewBubblewrap(&SandboxOptions{Workspace: ws})
			if err != nil {
				return nil, nil, err
			}
			return c.sp, func() { c.Close() }, nil
		}},
		{"landlock", func() (*spawner, func(), error) {
			c, err := NewLandlock(&SandboxOptions{Workspace: ws})
			if err != nil {
				return nil, nil, err
			}
			return c.sp, func() { c.Close() }, nil
		}},
	} {
		b.Run(k.name, func(b *testing.B) {
			sp, done, err := k.make()
			if err != nil || sp == nil {
				b.Skipf("%s: no spawner here: %v", k.name, err)
			}
			defer done()
			req := &StartRequest{Argv: []string{"/bin/true"}}
			env := []string{"PATH=/usr/bin:/bin"}
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				in, err := sp.take(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				p, err := sp.hand(in, req, ws, env)
				if err != nil {
					b.Fatal(err)
				}
				if code, err := p.Wait(); code != 0 {
					b.Fatal(code, err)
				}
			}
		})
	}
}
