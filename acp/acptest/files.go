package acptest

import (
	"context"
	"os"
	"sync"

	sdk "github.com/coder/acp-go-sdk"
)

// ServeFiles makes the client answer fs/read_text_file and
// fs/write_text_file as an editor does: from its open buffers (see
// SetBuffer), else from disk. Without it they answer method not found.
// Advertise clientCapabilities.fs in initialize.
func (c *Client) ServeFiles() {
	c.files = &files{buffers: map[string]string{}}
}

// SetBuffer opens path in a buffer holding text that is not saved.
func (c *Client) SetBuffer(path, text string) {
	c.files.mu.Lock()
	defer c.files.mu.Unlock()
	c.files.buffers[path] = text
}

// Buffer returns the text of path's buffer and whether one is open.
func (c *Client) Buffer(path string) (string, bool) {
	c.files.mu.Lock()
	defer c.files.mu.Unlock()
	t, ok := c.files.buffers[path]
	return t, ok
}

// RefuseWrites makes fs/write_text_file fail with msg, as an editor
// whose buffer is read-only does; the file is left as it is.
func (c *Client) RefuseWrites(msg string) {
	c.files.mu.Lock()
	defer c.files.mu.Unlock()
	c.files.refuse = msg
}

type files struct {
	mu      sync.Mutex
	buffers map[string]string
	refuse  string
}

// ReadTextFile returns the buffer of the path, else the file on disk.
func (c *Client) ReadTextFile(ctx context.Context, p sdk.ReadTextFileRequest) (sdk.ReadTextFileResponse, error) {
	if c.files == nil {
		return sdk.ReadTextFileResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodFsReadTextFile)
	}
	c.mu.Lock()
	c.record("fs read ", p.Path, false)
	c.mu.Unlock()
	if t, ok := c.Buffer(p.Path); ok {
		return sdk.ReadTextFileResponse{Content: t}, nil
	}
	b, err := os.ReadFile(p.Path)
	if err != nil {
		return sdk.ReadTextFileResponse{}, sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	return sdk.ReadTextFileResponse{Content: string(b)}, nil
}

// WriteTextFile writes the file and, when it is open, its buffer, which is
// then saved.
func (c *Client) WriteTextFile(ctx context.Context, p sdk.WriteTextFileRequest) (sdk.WriteTextFileResponse, error) {
	if c.files == nil {
		return sdk.WriteTextFileResponse{}, sdk.NewMethodNotFound(sdk.ClientMethodFsWriteTextFile)
	}
	c.mu.Lock()
	c.record("fs write ", p.Path, false)
	c.mu.Unlock()
	c.files.mu.Lock()
	refuse := c.files.refuse
	c.files.mu.Unlock()
	if refuse != "" {
		return sdk.WriteTextFileResponse{}, sdk.NewInternalError(map[string]any{"error": refuse})
	}
	if err := os.WriteFile(p.Path, []byte(p.Content), 0o644); err != nil {
		return sdk.WriteTextFileResponse{}, sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	c.files.mu.Lock()
	defer c.files.mu.Unlock()
	if _, ok := c.files.buffers[p.Path]; ok {
		c.files.buffers[p.Path] = p.Content
	}
	return sdk.WriteTextFileResponse{}, nil
}
