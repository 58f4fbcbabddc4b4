package shell

import (
	"bytes"
	"fmt"
	"os"
	"unicode/utf8"
)

// capture keeps a command's output within a byte limit: the whole output
// while it fits, then its head and tail, with everything written to a
// spill file from the moment it stopped fitting.
type capture struct {
	limit int
	all   []byte // the output while it fits in limit
	head  []byte // once spilled: the first limit/2 bytes
	tail  []byte // once spilled: at least the last limit/2 bytes
	total int64

	spill     *os.File
	spillPath string
	spillErr  error
	openSpill func() (*os.File, string, error)
}

func (c *capture) Write(p []byte) (int, error) {
	n0 := len(p)
	c.total += int64(n0)
	if c.spill == nil && c.spillErr == nil && len(c.all)+len(p) <= c.limit {
		c.all = append(c.all, p...)
		return n0, nil
	}
	if c.spill == nil && c.spillErr == nil {
		c.spill, c.spillPath, c.spillErr = c.openSpill()
		if c.spill != nil {
			if _, err := c.spill.Write(c.all); err != nil {
				c.spillErr = err
			}
		}
		half := c.limit / 2
		c.head = append([]byte(nil), c.all[:min(half, len(c.all))]...)
		c.tail = append(c.tail, c.all[len(c.head):]...)
		c.all = nil
	}
	if c.spill != nil && c.spillErr == nil {
		if _, err := c.spill.Write(p); err != nil {
			c.spillErr = err
		}
	}
	if len(c.head) < c.limit/2 {
		n := min(c.limit/2-len(c.head), len(p))
		c.head = append(c.head, p[:n]...)
		p = p[n:]
	}
	c.tail = append(c.tail, p...)
	if keep := c.limit - c.limit/2; len(c.tail) > 2*keep {
		c.tail = append(c.tail[:0], c.tail[len(c.tail)-keep:]...)
	}
	return n0, nil
}

func (c *capture) close() {
	if c.spill != nil {
		c.spill.Close()
	}
}

// text renders the output for the model: whole, or head, a marker that
// says where the rest is, and tail.
func (c *capture) text(displayPath func(string) string) string {
	if c.head == nil && c.tail == nil {
		return string(c.all)
	}
	head := c.head
	for len(head) > 0 && !utf8.Valid(head[max(0, len(head)-4):]) {
		head = head[:len(head)-1]
	}
	keep := c.limit - c.limit/2
	tail := c.tail
	if len(tail) > keep {
		tail = tail[len(tail)-keep:]
	}
	for len(tail) > 0 && !utf8.RuneStart(tail[0]) {
		tail = tail[1:]
	}
	// Cut at line ends when that keeps most of each part.
	if i := bytes.LastIndexByte(head, '\n'); i >= len(head)/2 {
		head = head[:i+1]
	}
	if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < len(tail)/2 {
		tail = tail[i+1:]
	}
	omitted := c.total - int64(len(head)) - int64(len(tail))
	where := "the full output could not be saved: " + fmt.Sprint(c.spillErr)
	if c.spillErr == nil {
		where = "the full output is in " + displayPath(c.spillPath) + " (read it in ranges or grep it)"
	}
	return fmt.Sprintf("%s\n… [%d bytes omitted; %s] …\n\n%s", head, omitted, where, tail)
}
