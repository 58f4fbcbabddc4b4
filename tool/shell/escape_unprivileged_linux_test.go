package shell_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/reinhq/rein/tool/exec/exectest"
)

// TestEscapeCorpusUnprivileged runs the escape corpus as an ordinary
// user too (exectest.AsUser), where the sandboxes confine through a user
// namespace, and checks that at least one sandbox ran it.
func TestEscapeCorpusUnprivileged(t *testing.T) {
	out := exectest.AsUser(t, exectest.Nobody, "^TestEscapeCorpus$")
	if t.Failed() {
		return
	}
	ran := regexp.MustCompile(`(?m)^\s*--- PASS: TestEscapeCorpus/(default|bubblewrap|landlock)\b.*$`).FindAllString(out, -1)
	if len(ran) == 0 {
		t.Skipf("no sandbox ran the corpus as uid %d here; what the tests said:\n%s", exectest.Nobody, exectest.Skips(out))
	}
	t.Logf("as uid %d:\n%s", exectest.Nobody, strings.Join(ran, "\n"))
}
