package fs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/reinhq/rein/llm"
	"github.com/reinhq/rein/tool"
	"github.com/reinhq/rein/tool/sandbox"
)

// openRead opens name for reading, asking for approval of secret files.
func (t *tools) openRead(ctx context.Context, name string) (*os.File, error) {
	f, err := t.p.Open(name, os.O_RDONLY, 0)
	if errors.Is(err, sandbox.ErrNeedsApproval) && t.o.ApproveSecret != nil {
		rel, rerr := t.p.Rel(name)
		if rerr == nil && t.o.ApproveSecret(ctx, rel) {
			return t.p.OpenApproved(name, os.O_RDONLY, 0)
		}
	}
	return f, err
}

// bufPool recycles file buffers between reads; huge ones are dropped.
var bufPool sync.Pool

const maxPooled = 16 << 20

func getBuf(size int) []byte {
	if p, ok := bufPool.Get().(*[]byte); ok && cap(*p) >= size {
		return (*p)[:0]
	} else if ok {
		bufPool.Put(p)
	}
	return make([]byte, 0, size+size/8)
}

// release returns a buffer from load for reuse; data must not be used
// afterwards.
func release(data []byte) {
	if cap(data) > 0 && cap(data) <= maxPooled {
		data = data[:0]
		bufPool.Put(&data)
	}
}

// load reads a whole file (up to MaxFileBytes) and its fingerprint. The
// caller passes data to release when done with it.
func (t *tools) load(ctx context.Context, name string) (data []byte, fp fingerprint, mode os.FileMode, res *tool.Result) {
	f, err := t.openRead(ctx, name)
	if err != nil {
		return nil, fp, 0, pathError(name, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fp, 0, pathError(name, err)
	}
	if fi.Size() > t.o.MaxFileBytes {
		return nil, fp, 0, tool.Errorf("%s is %s, too large to open here (the limit is %s); search it with grep or look at parts of it with the shell (head, tail, sed -n)", name, humanSize(fi.Size()), humanSize(t.o.MaxFileBytes))
	}
	data = getBuf(int(fi.Size()) + 1)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fp, 0, pathError(name, err)
		}
		if len(data) == cap(data) {
			if int64(len(data)) > t.o.MaxFileBytes {
				return nil, fp, 0, tool.Errorf("%s grew past %s while it was being read; try again", name, humanSize(t.o.MaxFileBytes))
			}
			data = append(data, 0)[:len(data)]
		}
	}
	return data, fingerprint{size: int64(len(data)), modTime: fi.ModTime(), sum: sha256.Sum256(data)}, fi.Mode(), nil
}

var imageTypes = map[string]string{".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp"}

func isBinary(data []byte) bool {
	head := data[:min(len(data), 8000)]
	if bytes.IndexByte(head, 0) >= 0 {
		return true
	}
	if !utf8.Valid(head) {
		// A multi-byte rune cut at the end of head is not binary.
		cut := len(head)
		for i := 0; i < 3 && cut > 0 && !utf8.Valid(head[:cut]); i++ {
			cut--
		}
		return !utf8.Valid(head[:cut])
	}
	return false
}

type readArgs struct {
	Path   string `json:"path"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

func (t *tools) readTool() tool.Tool {
	return &tool.Func{ToolSpec: tool.Spec{
		Name: "read",
		Description: "Read a file in the workspace. Text comes back with line numbers (like cat -n); use offset (1-based line) and limit (lines) " +
			"to read part of a large file. Images (png, jpeg, gif, webp) come back as images. Reading a file you already read, " +
			"unchanged, returns a short note instead of the content.",
		Schema: schema(`{"type":"object","properties":{` +
			`"path":{"type":"string","description":"file path, relative to the workspace root or absolute inside it"},` +
			`"offset":{"type":"integer","minimum":1,"description":"first line to read, 1-based (default 1)"},` +
			`"limit":{"type":"integer","minimum":1,"description":"how many lines to read (default 2000)"}},` +
			`"required":["path"],"additionalProperties":false}`),
		Annotations: &tool.Annotations{ReadOnly: true, Idempotent: true},
	}, Fn: t.read, SubjectFn: tool.PathSubject}
}

func (t *tools) read(ctx context.Context, call *tool.Call) (*tool.Result, error) {
	var a readArgs
	if r := tool.DecodeArgs(call, &a); r != nil {
		return r, nil
	}
	if a.Path == "" {
		return tool.Errorf("path is required"), nil
	}
	if a.Offset < 0 || a.Limit < 0 {
		return tool.Errorf("offset and limit must be positive"), nil
	}
	rel, err := t.p.Rel(a.Path)
	if err != nil {
		return pathError(a.Path, err), nil
	}
	fi, err := t.p.Stat(a.Path)
	if err != nil {
		return pathError(a.Path, err), nil
	}
	if fi.IsDir() {
		return tool.Errorf("%s is a directory; list it with ls", a.Path), nil
	}
	if mt, ok := imageTypes[strings.ToLower(path.Ext(rel))]; ok {
		return t.readImage(ctx, a.Path, mt)
	}
	if strings.EqualFold(path.Ext(rel), ".pdf") {
		return t.readImage(ctx, a.Path, "application/pdf")
	}
	if a.Offset == 0 && a.Limit == 0 && fi.Size() > t.o.MaxReadBytes {
		return tool.Errorf("%s is %s, over the %s limit for reading a whole file; read part of it with offset and limit, or search it with grep", a.Path, humanSize(fi.Size()), humanSize(t.o.MaxReadBytes)), nil
	}
	data, fp, _, res := t.load(ctx, a.Path)
	if res != nil {
		return res, nil
	}
	defer release(data)
	if isBinary(data) {
		return tool.Errorf("%s is a binary file (%s) and cannot be shown as text", a.Path, humanSize(fp.size)), nil
	}
	offset, limit := max(a.Offset, 1), a.Limit
	if limit == 0 {
		limit = t.o.DefaultLines
	}
	st, _ := t.state.get(call.Session, rel)
	if st.readValid && st.seen == fp && st.readOffset == offset && st.readLim == limit {
		return tool.Text(fmt.Sprintf("File unchanged since you last read it (%s); the content you read before is still current.", a.Path)), nil
	}
	if len(data) == 0 {
		t.state.put(call.Session, rel, fileState{seen: fp, readValid: true, readOffset: offset, readLim: limit})
		return tool.Text(fmt.Sprintf("%s is empty.", a.Path)), nil
	}
	out, last, total, err := t.formatLines(data, offset, limit)
	if err != nil {
		return tool.Errorf("%s: %v", a.Path, err), nil
	}
	if last < total {
		out = fmt.Appendf(out, "\n(%s has %d lines; this shows lines %d-%d. Read on with offset=%d.)\n", a.Path, total, offset, last, last+1)
	}
	t.state.put(call.Session, rel, fileState{seen: fp, readValid: true, readOffset: offset, readLim: limit})
	return &tool.Result{Parts: []llm.Part{&llm.Text{Text: string(out)}}}, nil
}

// formatLines renders lines offset.. (1-based) in cat -n style, at most
// limit lines and MaxOutputBytes bytes. It returns the last line shown
// and the file's line count.
func (t *tools) formatLines(data []byte, offset, limit int) (out []byte, last, total int, err error) {
	total = bytes.Count(data, []byte{'\n'})
	if data[len(data)-1] != '\n' {
		total++
	}
	if offset > total {
		return nil, 0, total, fmt.Errorf("offset %d is past the end of the file, which has %d lines", offset, total)
	}
	pos := 0
	for line := 1; line < offset; line++ {
		pos += bytes.IndexByte(data[pos:], '\n') + 1
	}
	out = make([]byte, 0, min(len(data)-pos+limit*8, t.o.MaxOutputBytes+256))
	last = offset - 1
	for n := offset; n < offset+limit && pos < len(data); n++ {
		end := bytes.IndexByte(data[pos:], '\n')
		var line []byte
		if end < 0 {
			line, pos = data[pos:], len(data)
		} else {
			line, pos = data[pos:pos+end], pos+end+1
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		if len(out) > 0 && len(out)+len(line) > t.o.MaxOutputBytes {
			break
		}
		out = appendNumbered(out, n, line, t.o.MaxLineLength)
		last = n
	}
	return out, last, total, nil
}

// appendNumbered appends "%6d\t<line>\n", truncating long lines.
func appendNumbered(out []byte, n int, line []byte, maxLen int) []byte {
	var num [20]byte
	s := strconv.AppendInt(num[:0], int64(n), 10)
	for i := len(s); i < 6; i++ {
		out = append(out, ' ')
	}
	out = append(out, s...)
	out = append(out, '\t')
	if len(line) > maxLen {
		cut := maxLen
		for cut > 0 && !utf8.RuneStart(line[cut]) {
			cut--
		}
		out = append(out, line[:cut]...)
		out = fmt.Appendf(out, "… [line truncated, %d more bytes]", len(line)-cut)
	} else {
		out = append(out, line...)
	}
	return append(out, '\n')
}

// readImage returns an image or PDF file as a media part.
func (t *tools) readImage(ctx context.Context, name, mediaType string) (*tool.Result, error) {
	f, err := t.openRead(ctx, name)
	if err != nil {
		return pathError(name, err), nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return pathError(name, err), nil
	}
	if fi.Size() > t.o.MaxImageBytes {
		return tool.Errorf("%s is %s, over the %s limit for images and PDFs; make a smaller copy with the shell if you need to see it", name, humanSize(fi.Size()), humanSize(t.o.MaxImageBytes)), nil
	}
	data, err := io.ReadAll(io.LimitReader(f, t.o.MaxImageBytes+1))
	if err != nil {
		return pathError(name, err), nil
	}
	if sniffed := http.DetectContentType(data); sniffed != mediaType {
		return tool.Errorf("%s should hold %s data, going by its name, but its content looks like %s", name, mediaType, sniffed), nil
	}
	if mediaType == "application/pdf" {
		return &tool.Result{Parts: []llm.Part{
			&llm.Text{Text: fmt.Sprintf("PDF %s (%s)", name, humanSize(int64(len(data))))},
			&llm.Document{MediaType: mediaType, Data: data, Title: path.Base(name)},
		}}, nil
	}
	return &tool.Result{Parts: []llm.Part{
		&llm.Text{Text: fmt.Sprintf("Image %s (%s, %s)", name, mediaType, humanSize(int64(len(data))))},
		&llm.Image{MediaType: mediaType, Data: data},
	}}, nil
}
