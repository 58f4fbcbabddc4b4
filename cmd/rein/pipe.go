package main

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// runPrompt assembles the prompt of 'rein run' from its arguments and
// stdin: "-" alone reads the prompt from stdin; PROMPT followed by "-", or
// PROMPT with stdin piped or redirected from a file, appends what stdin
// holds to the prompt as context. A terminal on stdin is never read.
func (a *app) runPrompt(args []string) (string, error) {
	switch {
	case len(args) == 1 && args[0] == "-":
		b, err := io.ReadAll(a.stdin)
		if err != nil {
			return "", fmt.Errorf("read the prompt from stdin: %w", err)
		}
		return emptyPrompt(string(b))
	case len(args) == 2 && args[1] == "-":
		piped, err := a.readStdin()
		if err != nil {
			return "", err
		}
		return withContext(args[0], piped)
	case len(args) == 1:
		piped := ""
		if stdinPiped(a.stdin) {
			var err error
			if piped, err = a.readStdin(); err != nil {
				return "", err
			}
		}
		return withContext(args[0], piped)
	}
	return "", usageErrorf("rein run takes PROMPT, PROMPT -, or - (the prompt from stdin); got %s\nRun 'rein run --help' for usage.", plural(len(args), "argument"))
}

func (a *app) readStdin() (string, error) {
	b, err := io.ReadAll(a.stdin)
	if err != nil {
		return "", fmt.Errorf("read stdin: %w", err)
	}
	return string(b), nil
}

// withContext appends piped input to prompt, marked as what came on stdin.
func withContext(prompt, piped string) (string, error) {
	if strings.TrimSpace(piped) == "" {
		return emptyPrompt(prompt)
	}
	if strings.TrimSpace(prompt) == "" {
		return "", usageErrorf("the prompt is empty; say what to do with the input on stdin")
	}
	return prompt + "\n\n<stdin>\n" + strings.TrimRight(piped, "\n") + "\n</stdin>", nil
}

func emptyPrompt(p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", usageErrorf("the prompt is empty")
	}
	return p, nil
}

// stdinPiped reports whether r is a pipe or a regular file: input someone
// sent on purpose. A terminal, /dev/null or an unknown reader is not read
// unasked.
func stdinPiped(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	if err != nil {
		return false
	}
	m := st.Mode()
	return m&os.ModeNamedPipe != 0 || m.IsRegular()
}
