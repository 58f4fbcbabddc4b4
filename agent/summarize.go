package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/session"
)

// summarize has the model summarise msgs, in chunks that fit its window:
// each chunk's call carries the summary so far.
func (a *Agent) summarize(ctx context.Context, t Target, o CompactionOptions, msgs []llm.Message, instructions string, progress func(done, total int)) (string, int, llm.Usage, error) {
	var usage llm.Usage
	// A chunk gets the usable window less the prompt, the summary carried
	// over and the summary written, with a margin for the estimate.
	budget := int64(100000)
	if u := a.usable(); u > 0 {
		o.SummaryTokens = int(min(int64(o.SummaryTokens), max(u/8, 256)))
		budget = min(budget, (u-estimateText(o.Prompt)-2*int64(o.SummaryTokens))*3/4)
	}
	budget = max(budget, 1024)
	for attempt := 0; ; attempt++ {
		chunks := renderChunks(msgs, budget*4)
		summary := ""
		var err error
		for i, c := range chunks {
			var u llm.Usage
			summary, u, err = a.summaryCall(ctx, t, o, c, summary, instructions, i == len(chunks)-1)
			usage.Add(u)
			if err != nil {
				break
			}
			if progress != nil {
				progress(i+1, len(chunks))
			}
		}
		if err == nil {
			return summary, len(chunks), usage, nil
		}
		if llm.KindOf(err) == llm.ErrContextTooLong && attempt < 3 && budget > 1024 {
			budget /= 2 // the estimate was short: smaller chunks
			continue
		}
		return "", 0, usage, fmt.Errorf("agent: compact: the summary request failed: %w", err)
	}
}

func (a *Agent) summaryCall(ctx context.Context, t Target, o CompactionOptions, transcript, sofar, instructions string, final bool) (string, llm.Usage, error) {
	var b strings.Builder
	if sofar != "" {
		b.WriteString("Summary of the conversation before this part:\n<summary>\n")
		b.WriteString(sofar)
		b.WriteString("\n</summary>\n\n")
	}
	b.WriteString("The conversation to summarise:\n<conversation>\n")
	b.WriteString(transcript)
	b.WriteString("\n</conversation>\n\n")
	if sofar != "" {
		b.WriteString("Write one summary covering both the summary above and this part.")
	} else {
		b.WriteString("Summarise the conversation.")
	}
	if instructions != "" {
		b.WriteString("\n\nAlso: ")
		b.WriteString(instructions)
	}
	req := &llm.Request{
		Model:     t.Model,
		System:    []llm.Text{{Text: o.Prompt}},
		Messages:  []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{&llm.Text{Text: b.String()}}}},
		MaxTokens: o.SummaryTokens,
	}
	res, err := llm.Collect(t.Client.Stream(ctx, req))
	var u llm.Usage
	if res != nil {
		u = res.Usage
	}
	if err != nil {
		return "", u, err
	}
	s := strings.TrimSpace(res.Message.Text())
	if s == "" {
		return "", u, errors.New("agent: compact: the model returned an empty summary")
	}
	return s, u, nil
}

// Caps on what one message contributes to a summarizer transcript.
const (
	transcriptResultBytes = 4000
	transcriptArgsBytes   = 1000
)

// renderChunks renders msgs as a plain transcript cut into chunks of at
// most limit bytes, at message boundaries where it can.
func renderChunks(msgs []llm.Message, limit int64) []string {
	var chunks []string
	var cur strings.Builder
	for _, m := range msgs {
		s := renderMessage(m)
		if int64(len(s)) > limit {
			s = s[:limit-64] + "\n[… cut to fit]\n"
		}
		if cur.Len() > 0 && int64(cur.Len()+len(s)) > limit {
			chunks = append(chunks, cur.String())
			cur.Reset()
		}
		cur.WriteString(s)
	}
	if cur.Len() > 0 || len(chunks) == 0 {
		chunks = append(chunks, cur.String())
	}
	return chunks
}

func renderMessage(m llm.Message) string {
	var b strings.Builder
	for _, p := range m.Parts {
		switch p := p.(type) {
		case *llm.Text:
			fmt.Fprintf(&b, "[%s]\n%s\n", m.Role, p.Text)
		case *llm.ToolCall:
			fmt.Fprintf(&b, "[tool call %s %s]\n%s\n", p.ID, p.Name, clip(string(p.Args), transcriptArgsBytes))
		case *llm.ToolResult:
			status := "result"
			if p.IsError {
				status = "error result"
			}
			fmt.Fprintf(&b, "[tool %s %s]\n%s\n", status, p.CallID, clip(partsText(p.Parts), transcriptResultBytes))
		case *llm.Image:
			fmt.Fprintf(&b, "[%s: an image]\n", m.Role)
		case *llm.Document:
			fmt.Fprintf(&b, "[%s: a document %s]\n", m.Role, p.Title)
		}
	}
	return b.String()
}

func partsText(parts []llm.Part) string {
	var b strings.Builder
	for _, p := range parts {
		if t, ok := p.(*llm.Text); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("\n[… %d more bytes]", len(s)-n)
}

// reattach returns the context re-attached after a summary: the latest
// successful read of each recently read file whose read is compacted
// away, newest first, within the options' bounds, and the todo list when
// its last write is compacted away.
func (a *Agent) reattach(o CompactionOptions, evs []session.Event, cutIdx int) ([]llm.Part, int) {
	readTools := map[string]bool{}
	for _, n := range o.ReadTools {
		readTools[n] = true
	}
	paths := map[llm.CallID]string{}
	type read struct {
		path string
		text string
	}
	var reads []read // in log order
	keptPaths := map[string]bool{}
	var todo *session.TodoWrite
	todoIdx := -1
	for i := range evs {
		switch p := evs[i].Data.(type) {
		case *session.ToolCall:
			if readTools[p.Name] {
				var args struct {
					Path     string `json:"path"`
					FilePath string `json:"file_path"`
				}
				if json.Unmarshal(p.Args, &args) == nil {
					paths[p.CallID] = cmpOr(args.Path, args.FilePath)
				}
			}
		case *session.ToolResult:
			path, ok := paths[p.CallID]
			if !ok || path == "" || p.IsError {
				continue
			}
			if i > cutIdx {
				keptPaths[path] = true
				continue
			}
			reads = append(reads, read{path, partsText(p.Parts)})
		case *session.TodoWrite:
			todo, todoIdx = p, i
		}
	}
	var parts []llm.Part
	n, bytes := 0, 0
	seen := map[string]bool{}
	for i := len(reads) - 1; i >= 0 && n < o.ReattachFiles; i-- {
		r := reads[i]
		if seen[r.path] || keptPaths[r.path] {
			continue
		}
		seen[r.path] = true
		if bytes+len(r.text) > o.ReattachBytes {
			continue
		}
		bytes += len(r.text)
		n++
		parts = append(parts, &llm.Text{Text: fmt.Sprintf("The file %s as last read before the conversation was compacted (read it again before editing it):\n%s", r.path, r.text)})
	}
	slices.Reverse(parts)
	if todo != nil && todoIdx <= cutIdx && len(todo.Items) > 0 {
		var b strings.Builder
		b.WriteString("The todo list as last written:\n")
		for _, it := range todo.Items {
			data, _ := json.Marshal(it)
			b.Write(data)
			b.WriteByte('\n')
		}
		parts = append(parts, &llm.Text{Text: b.String()})
		n++
	}
	return parts, n
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
