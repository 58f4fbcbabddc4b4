package postgres_test

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// TestMain leaves the examples out when there is no server and no -run
// names what to run: every test of this package needs a server and
// skips, saying so, but an example cannot skip.
func TestMain(m *testing.M) {
	flag.Parse()
	if os.Getenv(envURL) == "" && flag.Lookup("test.run").Value.String() == "" {
		if err := flag.Set("test.run", "^Test"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}
