package sqlite_test

import (
	"context"
	"fmt"

	"github.com/reinhq/rein/session/sqlite"
)

func extraChild(ctx context.Context, mode string, st *sqlite.Store, say func(string, ...any)) error {
	return fmt.Errorf("unknown child mode %q", mode)
}
