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

// lockedWriter serialises whole-line writes of the SDK and of filterLines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// filterLines copies the JSON-RPC messages of r to dst, one a line, and
// answers the lines that are not messages with a JSON-RPC error on out, so
// a malformed line gets an answer instead of a silent drop and the
// connection goes on. It returns r's error, nil at EOF.
func filterLines(r io.Reader, dst io.Writer, out io.Writer, log *slog.Logger) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var msg []byte // the line and its newline; line itself is the scanner's
	for sc.Scan() {
		line := sc.Bytes()
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if reply := checkMessage(line); reply != nil {
			log.Warn("acp: malformed message", "err", reply.Error.Message)
			b, _ := json.Marshal(reply)
			if _, err := out.Write(append(b, '\n')); err != nil {
				return err
			}
			continue
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
// message, nil for one that is.
func checkMessage(line []byte) *rpcReply {
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
			return &rpcReply{"2.0", null, rpcError{-32600, "Invalid request: a message must be a JSON object with \"jsonrpc\": \"2.0\""}}
		}
		return &rpcReply{"2.0", null, rpcError{-32700, "Parse error: the line is not JSON; send one JSON-RPC message per line"}}
	}
	id := null
	if m.ID != nil {
		id = *m.ID
	}
	switch {
	case m.JSONRPC != "2.0":
		return &rpcReply{"2.0", id, rpcError{-32600, "Invalid request: \"jsonrpc\" must be \"2.0\""}}
	case m.Method != nil && *m.Method == "":
		return &rpcReply{"2.0", id, rpcError{-32600, "Invalid request: \"method\" is empty"}}
	case m.Method == nil && m.ID == nil:
		return &rpcReply{"2.0", null, rpcError{-32600, "Invalid request: a message needs a \"method\" or, for a response, an \"id\""}}
	case m.Method == nil && m.Result == nil && m.Error == nil:
		return &rpcReply{"2.0", id, rpcError{-32600, "Invalid request: a response needs a \"result\" or an \"error\"; a request needs a \"method\""}}
	}
	return nil
}
