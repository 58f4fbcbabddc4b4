package exec_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/reinhq/rein/tool/exec/exectest"
)

// unprivilegedTests are the tests re-run, in two runs at once (they
// mostly wait for processes): the conformance suite (with its
// confinement checks) on both sandboxes, with and without the spawner,
// and the tests of commands apart, of escapees and of inits reused.
var unprivilegedTests = []string{
	"^(TestBubblewrap|TestLandlock|TestSandbox(CommandsApart|EscapeeEndsWithCommand|InitReused|InitUntouchable))$",
	"^TestSandboxPerCommand$",
}

// TestSandboxUnprivileged re-runs the sandbox tests as an ordinary user
// (exectest.AsUser), and checks that a sandbox confined commands there.
func TestSandboxUnprivileged(t *testing.T) {
	out := exectest.AsUser(t, exectest.Nobody, unprivilegedTests...)
	if t.Failed() {
		return
	}
	confined := regexp.MustCompile(`(?m)^\s*--- PASS: (TestBubblewrap|TestLandlock|TestSandboxPerCommand/\w+)/Confinement\b.*$`).FindAllString(out, -1)
	if len(confined) == 0 {
		t.Skipf("no sandbox confines commands as uid %d here (are user namespaces unavailable to it?); what the tests said:\n%s",
			exectest.Nobody, exectest.Skips(out))
	}
	t.Logf("as uid %d:\n%s", exectest.Nobody, strings.Join(confined, "\n"))
}
