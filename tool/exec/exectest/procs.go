package exectest

import (
	"bytes"
	"os"
	"path/filepath"
)

// CountProcesses counts the live processes on this machine (zombies
// aside) whose command line contains marker: give a test's commands a
// unique argument (sleep 300.12345) and count what is left of them.
func CountProcesses(marker string) int {
	n := 0
	paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "stat"))
		if i := bytes.LastIndexByte(stat, ')'); i > 0 && len(stat) > i+2 && stat[i+2] == 'Z' {
			continue
		}
		n++
	}
	return n
}
