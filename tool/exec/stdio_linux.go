package exec

import (
	"io"
	"os"
	"sync"
)

// stdio is the stdin, stdout and stderr of a command started in
// another process: files to pass it, and the copying between pipes and
// the request's readers and writers when they are not files.
type stdio struct {
	files [3]*os.File
	closeAfterStart,
	closeAfterWait []*os.File
	copies sync.WaitGroup
}

func newStdio(req *StartRequest) (*stdio, error) {
	s := &stdio{}
	var err error
	if s.files[0], err = s.input(req.Stdin); err == nil {
		if s.files[1], err = s.output(req.Stdout); err == nil {
			if req.Stderr != nil && req.Stderr == req.Stdout {
				s.files[2] = s.files[1]
			} else {
				s.files[2], err = s.output(req.Stderr)
			}
		}
	}
	if err != nil {
		s.abort()
		return nil, err
	}
	return s, nil
}

func (s *stdio) input(r io.Reader) (*os.File, error) {
	if f, ok := r.(*os.File); ok {
		return f, nil
	}
	if r == nil {
		return s.devNull(os.O_RDONLY)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	s.closeAfterStart = append(s.closeAfterStart, pr)
	s.closeAfterWait = append(s.closeAfterWait, pw)
	go func() {
		io.Copy(pw, r)
		pw.Close()
	}()
	return pr, nil
}

func (s *stdio) output(w io.Writer) (*os.File, error) {
	if f, ok := w.(*os.File); ok {
		return f, nil
	}
	if w == nil {
		return s.devNull(os.O_WRONLY)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	s.closeAfterStart = append(s.closeAfterStart, pw)
	s.closeAfterWait = append(s.closeAfterWait, pr)
	s.copies.Add(1)
	go func() {
		defer s.copies.Done()
		io.Copy(w, pr)
	}()
	return pw, nil
}

func (s *stdio) devNull(flag int) (*os.File, error) {
	f, err := os.OpenFile(os.DevNull, flag, 0)
	if err == nil {
		s.closeAfterStart = append(s.closeAfterStart, f)
	}
	return f, err
}

// fds are the descriptors to pass.
func (s *stdio) fds() []int {
	return []int{int(s.files[0].Fd()), int(s.files[1].Fd()), int(s.files[2].Fd())}
}

// started closes rein's copies of the command's ends.
func (s *stdio) started() {
	for _, f := range s.closeAfterStart {
		f.Close()
	}
	s.closeAfterStart = nil
}

// wait waits for the output to be copied (until every process that
// holds it has ended) and releases the pipes.
func (s *stdio) wait() {
	s.copies.Wait()
	for _, f := range s.closeAfterWait {
		f.Close()
	}
}

// abort releases everything when the command did not start.
func (s *stdio) abort() {
	s.started()
	for _, f := range s.closeAfterWait {
		f.Close()
	}
	s.copies.Wait()
}
