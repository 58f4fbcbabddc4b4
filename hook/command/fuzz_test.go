package command

import (
	"encoding/json"
	"testing"
)

// FuzzDecode feeds arbitrary hook output to the answer decoder: it must
// never panic, and a block always carries a reason.
func FuzzDecode(f *testing.F) {
	f.Add(0, `{"decision":"block","reason":"x"}`, "")
	f.Add(2, "", "no")
	f.Add(0, `{"hookSpecificOutput":{"permissionDecision":"ask","updatedInput":{"a":1},"additionalContext":"c"}}`, "")
	f.Add(0, `{"continue":false}`, "")
	f.Add(0, "plain text", "")
	f.Add(1, "{", "err")
	f.Fuzz(func(t *testing.T, exit int, stdout, stderr string) {
		for _, ev := range []string{PreToolUse, UserPromptSubmit, Stop} {
			a := decode(ev, &outcome{exit: exit, stdout: stdout, stderr: stderr})
			if a.kind == kindBlock && a.reason == "" {
				t.Fatalf("block without a reason for %q", stdout)
			}
			if a.stop && a.stopReason == "" {
				t.Fatalf("stop without a reason for %q", stdout)
			}
			if a.update != nil && !json.Valid(a.update) {
				t.Fatalf("invalid updatedInput kept: %q", a.update)
			}
		}
	})
}

// FuzzParse feeds arbitrary settings files to the parser: it must never
// panic, and every entry it returns has a compiled matcher when its event
// matches tools.
func FuzzParse(f *testing.F) {
	f.Add(`{"hooks":{"PreToolUse":[{"matcher":"Bash|Write","hooks":[{"type":"command","command":"x","timeout":3}]}]}}`)
	f.Add(`{"hooks":{"Stop":[{"hooks":[{"command":"y"}]}]},"disableAllHooks":false}`)
	f.Add(`{"hooks":{"PostToolUse":[{"matcher":"mcp__.*","hooks":[]}]}}`)
	f.Fuzz(func(t *testing.T, data string) {
		es, err := Parse([]byte(data), "f.json", false)
		if err != nil {
			return
		}
		for _, e := range es {
			if toolEvent(e.Event) && e.match == nil {
				t.Fatalf("entry %+v has no matcher", e)
			}
			if e.Timeout < 0 {
				t.Fatalf("negative timeout kept: %+v", e)
			}
		}
	})
}
