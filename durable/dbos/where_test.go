package dbos

import (
	"strings"
	"testing"
)

// Messages name the system database without its password, wherever the
// URL keeps it.
func TestWhereHidesPasswords(t *testing.T) {
	for _, url := range []string{
		"postgres://rein:s3cret@db:5432/app",
		"postgres://db:5432/app?user=rein&password=s3cret",
		"host=db user=rein password=s3cret",
	} {
		if got := where(url); strings.Contains(got, "s3cret") || got == "" {
			t.Errorf("where(%q) = %q", url, got)
		}
	}
	if got := where("sqlite:/tmp/x.db"); got != "sqlite:/tmp/x.db" {
		t.Errorf("where(sqlite) = %q", got)
	}
}
