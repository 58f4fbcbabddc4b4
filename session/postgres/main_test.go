package postgres_test

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// TestMain leaves the examples out when there is no server: every test
// of this package needs one and skips, saying so, but an example cannot
// skip.
func TestMain(m *testing.M) {
	if os.Getenv(envURL) == "" {
		flag.Parse()
		if err := flag.Set("test.run", "^Test"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}
