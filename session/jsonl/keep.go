package jsonl

import (
	"context"

	"github.com/reinhq/rein/session"
)

// keepBudget is the largest session file whose events the open scan
// keeps for the read that started it. Reading a session for the first
// time decodes each line once: the scan, which must check every line
// before it cuts or repairs anything, decodes it (decoding checks it as
// validJSON would), and the read yields what the scan kept. A larger
// file is checked and then read, so that memory stays bounded.
const keepBudget = 64 << 20

// keeper holds the events with seq > after that the open scan decoded.
type keeper struct {
	after  int64
	dec    lineDecoder
	blocks [][]session.Event // the events, in blocks that are never copied to grow
	count  int               // how many events the blocks hold
	n      int               // how many of them the scan accepted
	used   bool              // the scan ran
	off    bool              // gave up: the file is too large or a line did not decode
	end    cursor            // just after the lines the scan accepted
	marks  []cursor          // places in the file the scan passed, as readEvents marks them
}

// keepLine decodes line for k, which checks it as validJSON would, and
// reports whether it did. It does not for a line that lies before
// k.after, nor for one that does not decode, after which k gives up and
// the read decides on it.
func (k *keeper) keepLine(line []byte) bool {
	if k == nil || k.off {
		return false
	}
	if seq, count, fast := fastHead(line); fast && seq+int64(count)-1 <= k.after {
		return false
	}
	last := len(k.blocks) - 1
	if last < 0 || cap(k.blocks[last])-len(k.blocks[last]) < 64 {
		k.blocks = append(k.blocks, make([]session.Event, 0, keepBlock))
		last++
	}
	b := k.blocks[last]
	evs, err := k.dec.decodeLine(b, line)
	if err != nil {
		k.off, k.blocks = true, nil
		return false
	}
	k.blocks[last] = evs
	k.count += len(evs) - len(b)
	return true
}

// keepBlock is how many events a block of a keeper holds.
const keepBlock = 1024

// yield yields the first n events kept with seq > after and reports
// whether to go on.
func (k *keeper) yield(ctx context.Context, yield func(session.Event, error) bool) bool {
	left := k.n
	for _, b := range k.blocks {
		if err := ctx.Err(); err != nil {
			yield(session.Event{}, err)
			return false
		}
		for _, e := range b[:min(left, len(b))] {
			if e.Seq > k.after && !yield(e, nil) {
				return false
			}
		}
		if left -= min(left, len(b)); left == 0 {
			break
		}
	}
	return true
}
