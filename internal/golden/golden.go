// Package golden compares what a test produced with a file under
// testdata, and rewrites the file instead when the tests run with
// -update:
//
//	golden.Check(t, filepath.Join("testdata", "golden", "read.txt"), got)
//
// Every package's tests share the one -update flag it defines.
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Update is the -update flag: rewrite golden files rather than compare.
var Update = flag.Bool("update", false, "rewrite the golden files under testdata")

// Check compares got with the file at path and reports a diff
// (-want +got); under -update it writes got to path, creating its
// directory, and the comparison passes.
func Check(t testing.TB, path string, got []byte) {
	t.Helper()
	if *Update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}
