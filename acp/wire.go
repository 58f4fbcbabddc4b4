package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
)

// maxLine bounds one incoming message, as the SDK's reader does.
const maxLine = 10 << 20

// lockedWriter serialises whole-line writes of the SDK and of
// filterLines, and keeps count of the requests not answered yet, so the
// connection can end after their answers are out.
type lockedWriter struct {
	mu      sync.Mutex
	w       io.Writer
	pending map[string]bool // raw ids of requests in flight
	drained chan struct{}   // closed when pending empties while awaited
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	// The SDK writes one message a call: a response ends its request.
	if json.Unmarshal(p, &m) == nil && m.Method == "" && len(m.ID) > 0 {
		delete(l.pending, string(m.ID))
		if len(l.pending) == 0 && l.drained != nil {
			close(l.drained)
			l.drained = nil
		}
	}
	return l.w.Write(p)
}

// request notes a request on its way in.
func (l *lockedWriter) request(id json.RawMessage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.pending == nil {
		l.pending = map[string]bool{}
	}
	l.pending[string(id)] = true
}

// answered returns a channel closed once every request seen has its
// answer written.
func (l *lockedWriter) answered() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	ch := make(chan struct{})
	if len(l.pending) == 0 {
		close(ch)
		return ch
	}
	l.drained = ch
	return ch
}

// filterLines copies the JSON-RPC messages of r to dst, one a line, and
// answers the lines that are not messages with a JSON-RPC error on out, so
// a malformed line gets an answer instead of a silent drop and the
// connection goes on. It returns r's error, nil at EOF.
func filterLines(r io.Reader, dst io.Writer, out *lockedWriter, log *slog.Logger) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var msg []byte // the line and its newline; line itself is the scanner's
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		reply, id := checkMessage(line)
		if reply != nil {
			log.Warn("acp: malformed message", "err", reply.Error.Message)
			b, _ := json.Marshal(reply)
			if _, err := out.Write(append(b, '\n')); err != nil {
				return err
			}
			continue
		}
		if id != nil {
			out.request(id)
		}
		msg = append(append(msg[:0], line...), '\n')
		if _, err := dst.Write(msg); err != nil {
			return err
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return fmt.Errorf("acp: a message over %d bytes; the connection cannot go on", maxLine)
	}
	return sc.Err()
}

type rpcReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   rpcError        `json:"error"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// checkMessage returns the error reply for a line that is not a JSON-RPC
// message, and for one that is, nil and the id when it is a request.
func checkMessage(line []byte) (*rpcReply, json.RawMessage) {
	null := json.RawMessage("null")
	var m struct {
		JSONRPC string           `json:"jsonrpc"`
		ID      *json.RawMessage `json:"id"`
		Method  *string          `json:"method"`
		Result  json.RawMessage  `json:"result"`
		Error   json.RawMessage  `json:"error"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		if json.Valid(line) {
			return &rpcReply{"2.0", null, rpcError{-32600, "Invalid request: a message must be a JSON object with \"jsonrpc\": \"2.0\""}}, nil
		}
		return &rpcReply{"2.0", null, rpcError{-32700, "Parse error: the line is not JSON; send one JSON-RPC message per line"}}, nil
	}
	id := null
	if m.ID != nil {
		id = *m.ID
	}
	switch {
	case m.JSONRPC != "2.0":
		return &rpcReply{"2.0", id, rpcError{-32600, "Invalid request: \"jsonrpc\" must be \"2.0\""}}, nil
	case m.Method != nil && *m.Method == "":
		return &rpcReply{"2.0", id, rpcError{-32600, "Invalid request: \"method\" is empty"}}, nil
	case m.Method == nil && m.ID == nil:
		return &rpcReply{"2.0", null, rpcError{-32600, "Invalid request: a message needs a \"method\" or, for a response, an \"id\""}}, nil
	case m.Method == nil && m.Result == nil && m.Error == nil:
		return &rpcReply{"2.0", id, rpcError{-32600, "Invalid request: a response needs a \"result\" or an \"error\"; a request needs a \"method\""}}, nil
	case m.Method != nil && m.ID != nil:
		return nil, *m.ID
	}
	return nil, nil
}
