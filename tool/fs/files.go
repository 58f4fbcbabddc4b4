package fs

import (
	"context"
	"crypto/sha256"
	"os"
	"path"
	"path/filepath"

	"github.com/reinhq/rein/tool"
)

// Files is where the write, edit and multi_edit tools put a file's new
// content: the OS by default, or what a host plugs in with WithFiles (an
// editor that keeps its open buffers in step, say). The tools keep their
// checks whatever Files is: the path is confined by the policy (inside
// the workspace, not a secret, no symbolic or hard link leading out), an
// existing file was read in this session and is unchanged since, and its
// parent directories are made through the policy. What they read to check
// and to edit is the file on disk.
type Files interface {
	// WriteFile replaces the file at abs, an absolute path the policy
	// accepted, with data. perm is the mode a new file should get.
	WriteFile(ctx context.Context, abs string, data []byte, perm os.FileMode) error
}

// WithFiles returns tools with the filesystem tools among them (those
// NewTools made) writing through files; the others, and the tools that
// only read, are returned as they are. The returned tools share the
// originals' ReadState.
func WithFiles(tools []tool.Tool, files Files) []tool.Tool {
	out := make([]tool.Tool, len(tools))
	for i, t := range tools {
		out[i] = t
		if ft, ok := t.(*fileTool); ok && files != nil {
			out[i] = ft.withFiles(files)
		}
	}
	return out
}

// fileTool is one of the tools that write: it can be made again over
// other Files.
type fileTool struct {
	*tool.Func
	t     *tools
	build func(*tools) *tool.Func
}

func (ft *fileTool) withFiles(files Files) *fileTool {
	t := *ft.t
	t.files = files
	return &fileTool{Func: ft.build(&t), t: &t, build: ft.build}
}

// writeAny writes rel through t.files when set, else to the OS. Before
// Files has it, the target is opened for writing through the policy, so
// every rule of the OS path holds for it (a new file is created empty,
// and removed again when Files fails).
func (t *tools) writeAny(ctx context.Context, rel string, data []byte, perm os.FileMode) (fingerprint, error) {
	if t.files == nil {
		return t.writeFile(rel, data, perm)
	}
	root, err := t.p.RootDir()
	if err != nil {
		return fingerprint{}, err
	}
	if err := t.p.MkdirAll(path.Dir(rel), 0o755); err != nil {
		return fingerprint{}, err
	}
	_, serr := t.p.Stat(rel)
	f, err := t.p.Open(rel, os.O_WRONLY|os.O_CREATE, perm)
	if err != nil {
		return fingerprint{}, err
	}
	f.Close()
	if err := t.files.WriteFile(ctx, filepath.Join(root, filepath.FromSlash(rel)), data, perm); err != nil {
		if serr != nil {
			t.p.Remove(rel)
		}
		return fingerprint{}, err
	}
	fp := fingerprint{size: int64(len(data)), sum: sha256.Sum256(data)}
	if fi, err := t.p.Stat(rel); err == nil {
		fp.modTime = fi.ModTime()
	}
	return fp, nil
}
