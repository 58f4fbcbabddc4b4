package fs

import (
	"bytes"
	"context"
	"fmt"
	iofs "io/fs"
	"path"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/sandbox"
)

// fileTypes maps grep's type filter to file name patterns.
var fileTypes = map[string][]string{
	"go":     {"*.go"},
	"py":     {"*.py", "*.pyi"},
	"js":     {"*.js", "*.mjs", "*.cjs", "*.jsx"},
	"ts":     {"*.ts", "*.tsx", "*.mts", "*.cts"},
	"rs":     {"*.rs"},
	"md":     {"*.md", "*.markdown", "*.mdx"},
	"java":   {"*.java"},
	"kt":     {"*.kt", "*.kts"},
	"c":      {"*.c", "*.h"},
	"cpp":    {"*.cpp", "*.cc", "*.cxx", "*.hpp", "*.hh", "*.hxx", "*.h"},
	"cs":     {"*.cs"},
	"rb":     {"*.rb"},
	"php":    {"*.php"},
	"swift":  {"*.swift"},
	"sh":     {"*.sh", "*.bash", "*.zsh"},
	"json":   {"*.json"},
	"yaml":   {"*.yaml", "*.yml"},
	"toml":   {"*.toml"},
	"html":   {"*.html", "*.htm"},
	"css":    {"*.css", "*.scss", "*.sass", "*.less"},
	"sql":    {"*.sql"},
	"proto":  {"*.proto"},
	"txt":    {"*.txt"},
	"xml":    {"*.xml"},
	"lua":    {"*.lua"},
	"zig":    {"*.zig"},
	"scala":  {"*.scala"},
	"elixir": {"*.ex", "*.exs"},
}

func typeNames() string {
	names := make([]string, 0, len(fileTypes))
	for k := range fileTypes {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

type grepArgs struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path"`
	Glob       string `json:"glob"`
	Type       string `json:"type"`
	Output     string `json:"output"`
	IgnoreCase bool   `json:"-i"`
	Before     int    `json:"-B"`
	After      int    `json:"-A"`
	Context    int    `json:"-C"`
	Limit      int    `json:"limit"`
}

func (t *tools) grepTool() tool.Tool {
	return &tool.Func{ToolSpec: tool.Spec{
		Name: "grep",
		Description: "Search file contents with a regular expression (Go RE2 syntax) across the workspace, fast. " +
			"Skips binary files, the .git directory and files ignored by .gitignore. Output \"files\" (default) lists matching files, " +
			"\"content\" shows matching lines as path:line:text, \"count\" counts matching lines per file.",
		Schema: schema(`{"type":"object","properties":{` +
			`"pattern":{"type":"string","description":"regular expression (RE2); ^ and $ match at line boundaries"},` +
			`"path":{"type":"string","description":"file or directory to search (default: the workspace root)"},` +
			`"glob":{"type":"string","description":"only files matching this glob, such as *.go or src/**/*.ts"},` +
			`"type":{"type":"string","description":"only files of this type: go, py, js, ts, rs, md, java, c, cpp, sh, json, yaml, …"},` +
			`"output":{"type":"string","enum":["files","content","count"],"description":"what to show (default files)"},` +
			`"-i":{"type":"boolean","description":"case-insensitive"},` +
			`"-B":{"type":"integer","minimum":0,"description":"lines of context before each match (content output)"},` +
			`"-A":{"type":"integer","minimum":0,"description":"lines of context after each match (content output)"},` +
			`"-C":{"type":"integer","minimum":0,"description":"lines of context before and after each match (content output)"},` +
			`"limit":{"type":"integer","minimum":1,"description":"at most this many files or matching lines"}},` +
			`"required":["pattern"],"additionalProperties":false}`),
		Annotations: &tool.Annotations{ReadOnly: true, Idempotent: true},
	}, Fn: t.grep, SubjectFn: tool.PathSubject}
}

// fileMatch is what grep found in one file.
type fileMatch struct {
	count int
	out   []byte // content mode: rendered lines
	lines int    // content mode: matching lines rendered
	ends  []int  // content mode: offset in out after each matching line
}

func (t *tools) grep(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	var a grepArgs
	if r := tool.DecodeArgs(call, &a); r != nil {
		return r, nil
	}
	re, typePats, bad := a.check()
	if bad != nil {
		return bad, nil
	}
	if a.Path == "" {
		a.Path = "."
	}
	base, err := t.p.Rel(a.Path)
	if err != nil {
		return pathError(a.Path, err), nil
	}
	fi, err := t.p.Stat(a.Path)
	if err != nil {
		return pathError(a.Path, err), nil
	}
	before, after := max(a.Before, a.Context), max(a.After, a.Context)
	limit := a.Limit
	if limit <= 0 {
		if a.Output == "content" {
			limit = t.o.MaxMatches
		} else {
			limit = t.o.MaxEntries
		}
	}
	wanted := func(rel string) bool {
		sub := rel
		if base != "." && fi.IsDir() {
			sub = strings.TrimPrefix(rel, base+"/")
		}
		if a.Glob != "" && !globMatch(a.Glob, sub) {
			return false
		}
		if typePats != nil && !slices.ContainsFunc(typePats, func(p string) bool { return globMatch(p, sub) }) {
			return false
		}
		return true // secret files fail to open and are skipped
	}
	search := func(rel string, buf []byte, res *fileMatch) []byte {
		return t.grepFile(rel, re, a.Output, before, after, buf, res)
	}
	files, results, err := t.searchFiles(ctx, base, fi.IsDir(), wanted, search)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return pathError(a.Path, err), nil
	}
	return tool.Text(renderGrep(a, files, results, limit, before+after > 0)), nil
}

// check settles a's output mode and checks its pattern, type and glob:
// it returns the pattern as searched and the type's globs, or the
// result that says what is wrong.
func (a *grepArgs) check() (*regexp.Regexp, []string, *tool.Result) {
	if a.Pattern == "" {
		return nil, nil, tool.Errorf("pattern is required")
	}
	switch a.Output {
	case "":
		a.Output = "files"
	case "files", "content", "count":
	default:
		return nil, nil, tool.Errorf("output must be files, content or count, not %q", a.Output)
	}
	if _, err := regexp.Compile(a.Pattern); err != nil {
		return nil, nil, tool.Errorf("pattern %q is not a valid regular expression: %v", a.Pattern, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	expr := "(?m)" + a.Pattern
	if a.IgnoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, nil, tool.Errorf("pattern %q is not a valid regular expression: %v", a.Pattern, strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	var typePats []string
	if a.Type != "" {
		var ok bool
		if typePats, ok = fileTypes[a.Type]; !ok {
			return nil, nil, tool.Errorf("unknown type %q; known types: %s", a.Type, typeNames())
		}
	}
	if a.Glob != "" {
		if err := checkPattern(a.Glob); err != nil {
			return nil, nil, tool.Errorf("glob %q %v", a.Glob, err)
		}
	}
	return re, typePats, nil
}

// searchFiles runs search over base (each regular file wanted of the
// tree, when dir, else base itself) on as many goroutines as there are
// processors, while the walk goes on; results keep walk order.
func (t *tools) searchFiles(ctx context.Context, base string, dir bool, wanted func(string) bool, search func(string, []byte, *fileMatch) []byte) ([]string, []*fileMatch, error) {
	var (
		files   []string
		results []*fileMatch
		wg      sync.WaitGroup
	)
	type job struct {
		rel string
		res *fileMatch
	}
	jobs := make(chan job, 256)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var buf []byte
			for j := range jobs {
				if ctx.Err() == nil {
					buf = search(j.rel, buf, j.res)
				}
			}
		}()
	}
	add := func(rel string) {
		r := new(fileMatch)
		files, results = append(files, rel), append(results, r)
		jobs <- job{rel, r}
	}
	var err error
	if dir {
		err = t.walk(ctx, base, true, func(rel string, d iofs.DirEntry) error {
			if d.Type().IsRegular() && wanted(rel) {
				add(rel)
			}
			return nil
		})
	} else {
		add(base)
	}
	close(jobs)
	wg.Wait()
	return files, results, err
}

// globMatch matches a glob without a slash against the base name, one
// with a slash against the whole relative path.
func globMatch(pat, rel string) bool {
	if !strings.Contains(pat, "/") {
		ok, err := path.Match(pat, path.Base(rel))
		return err == nil && ok
	}
	return sandbox.Match(pat, rel)
}

// grepFile searches one file, reusing buf for its content.
func (t *tools) grepFile(rel string, re *regexp.Regexp, mode string, before, after int, buf []byte, res *fileMatch) []byte {
	data, err := t.p.ReadFile(rel, buf, t.o.MaxFileBytes)
	if err != nil {
		return buf // unreadable, secret or too large: skipped
	}
	buf = data[:0]
	if bytes.IndexByte(data[:min(len(data), 8000)], 0) >= 0 {
		return buf
	}
	switch mode {
	case "files":
		if re.Match(data) {
			res.count = 1
		}
	case "count":
		for pos := 0; pos <= len(data); {
			loc := re.FindIndex(data[pos:])
			if loc == nil {
				break
			}
			res.count++
			end := bytes.IndexByte(data[pos+loc[1]:], '\n')
			if end < 0 {
				break
			}
			pos += loc[1] + end + 1
		}
	default:
		t.grepContent(rel, data, re, before, after, res)
	}
	return buf
}

// grepContent renders matching lines with context, grep style:
// "path:N:text" for matches, "path-N-text" for context, "--" between
// groups.
func (t *tools) grepContent(rel string, data []byte, re *regexp.Regexp, before, after int, res *fileMatch) {
	// Line start offsets are found lazily: only files with a match pay.
	loc := re.FindIndex(data)
	if loc == nil {
		return
	}
	var starts []int
	starts = append(starts, 0)
	for i, c := range data {
		if c == '\n' && i+1 < len(data) {
			starts = append(starts, i+1)
		}
	}
	lineOf := func(off int) int { // 0-based
		return sort.Search(len(starts), func(i int) bool { return starts[i] > off }) - 1
	}
	lineText := func(l int) []byte {
		end := len(data)
		if l+1 < len(starts) {
			end = starts[l+1] - 1
		}
		line := bytes.TrimSuffix(data[starts[l]:end], []byte{'\n'})
		return bytes.TrimSuffix(line, []byte{'\r'})
	}
	var matched []int
	for pos := 0; pos <= len(data) && loc != nil; {
		l := lineOf(pos + loc[0])
		matched = append(matched, l)
		res.count++
		if l+1 >= len(starts) {
			break
		}
		pos = starts[l+1]
		loc = re.FindIndex(data[pos:])
	}
	lastShown := -1
	maxLen := min(t.o.MaxLineLength, 500)
	for i, l := range matched {
		from := max(l-before, lastShown+1, 0)
		if lastShown >= 0 && from > lastShown+1 && before+after > 0 {
			res.out = append(res.out, "--\n"...)
		}
		for c := from; c < l; c++ {
			res.out = appendLine(res.out, rel, c+1, '-', lineText(c), maxLen)
		}
		res.out = appendLine(res.out, rel, l+1, ':', lineText(l), maxLen)
		res.ends = append(res.ends, len(res.out))
		res.lines++
		lastShown = l
		end := min(l+after, len(starts)-1)
		if i+1 < len(matched) {
			end = min(end, matched[i+1]-1)
		}
		for c := l + 1; c <= end; c++ {
			res.out = appendLine(res.out, rel, c+1, '-', lineText(c), maxLen)
			lastShown = c
		}
	}
}

func appendLine(out []byte, rel string, n int, sep byte, text []byte, maxLen int) []byte {
	out = append(out, rel...)
	out = append(out, sep)
	out = fmt.Append(out, n)
	out = append(out, sep)
	if len(text) > maxLen {
		out = append(out, text[:maxLen]...)
		out = append(out, "…"...)
	} else {
		out = append(out, text...)
	}
	return append(out, '\n')
}

func renderGrep(a grepArgs, files []string, results []*fileMatch, limit int, groups bool) string {
	var b strings.Builder
	matchedFiles, total := 0, 0
	for _, r := range results {
		if r.count > 0 {
			matchedFiles++
			total += r.count
		}
	}
	if matchedFiles == 0 {
		return fmt.Sprintf("No matches for %s in %s.", a.Pattern, where(a.Path))
	}
	switch a.Output {
	case "files":
		shown := 0
		for i, r := range results {
			if r.count == 0 {
				continue
			}
			if shown == limit {
				fmt.Fprintf(&b, "… %d more files\n", matchedFiles-shown)
				break
			}
			b.WriteString(files[i])
			b.WriteByte('\n')
			shown++
		}
	case "count":
		shown := 0
		for i, r := range results {
			if r.count == 0 {
				continue
			}
			if shown == limit {
				fmt.Fprintf(&b, "… %d more files\n", matchedFiles-shown)
				break
			}
			fmt.Fprintf(&b, "%s:%d\n", files[i], r.count)
			shown++
		}
		fmt.Fprintf(&b, "%d matching lines in %d files\n", total, matchedFiles)
	default:
		shown := 0
		first := true
		for _, r := range results {
			if r.count == 0 {
				continue
			}
			if shown+r.lines > limit {
				// Cut inside this file at the limit.
				if !first && groups {
					b.WriteString("--\n")
				}
				if rest := limit - shown; rest > 0 {
					b.Write(r.out[:r.ends[rest-1]])
				}
				fmt.Fprintf(&b, "… %d more matches (narrow the pattern or the path, or raise limit)\n", total-limit)
				shown = limit
				break
			}
			if !first && groups {
				b.WriteString("--\n")
			}
			b.Write(r.out)
			shown += r.lines
			first = false
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
