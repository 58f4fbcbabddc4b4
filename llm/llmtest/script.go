package llmtest

import (
	"encoding/json"
	"time"

	"github.com/reinhq/rein/llm"
)

// DefaultUsage is the usage Reply, CallTool, CallTools and MalformedCall
// report unless WithUsage replaces it.
var DefaultUsage = llm.Usage{Input: 10, Output: 5}

// ending says how an Entry's stream ends after its chunks.
type ending int

const (
	endDone ending = iota // the chunks are the whole stream
	endHang               // block until the context is done
	endFail               // yield the entry's error
)

// Entry is one scripted response: what one Stream call yields. Build it with
// Reply, CallTool(s), Chunks, Fail, Hang and the others; refine it with
// WithUsage and WithDelay. An Entry is an immutable value and may be reused.
type Entry struct {
	chunks  []llm.Chunk
	end     ending
	err     error
	respond func(req *llm.Request) Entry
	delay   time.Duration
	// usageSet: the script chose the usage itself (WithUsage, or a
	// UsageChunk given to Chunks), so the fake server's prompt-cache
	// simulation leaves it alone.
	usageSet bool
	// provenance: fill a Finish's Provenance with provider "llmtest" and
	// the request's model; only for chunks the builders made.
	provenance bool
}

// Chunks streams the chunks exactly as given, then ends. It is the way to
// script anything the other builders do not: reasoning, interleaved
// blocks, a max-tokens finish, a stream with no Finish.
func Chunks(chunks ...llm.Chunk) Entry {
	e := Entry{chunks: chunks}
	for _, c := range chunks {
		if _, ok := c.(*llm.UsageChunk); ok {
			e.usageSet = true
		}
	}
	return e
}

// Reply answers with one text block, DefaultUsage and a stop finish.
func Reply(text string) Entry {
	return Entry{
		chunks: []llm.Chunk{
			&llm.BlockStart{Index: 0, Kind: llm.BlockText},
			&llm.TextDelta{Index: 0, Text: text},
			&llm.BlockEnd{Index: 0},
			&llm.UsageChunk{Usage: DefaultUsage},
			&llm.Finish{Reason: llm.FinishStop},
		},
		provenance: true,
	}
}

// CallTools answers with one tool-call block per call, in order (no text),
// DefaultUsage and a tool-calls finish. A call's Args are streamed as given;
// empty Args stream as no argument text at all.
func CallTools(calls ...llm.ToolCall) Entry {
	chunks := make([]llm.Chunk, 0, 3*len(calls)+2)
	for i, c := range calls {
		chunks = append(chunks, &llm.BlockStart{Index: i, Kind: llm.BlockToolCall, ID: c.ID, Name: c.Name})
		if len(c.Args) > 0 {
			chunks = append(chunks, &llm.ToolCallDelta{Index: i, Args: string(c.Args)})
		}
		chunks = append(chunks, &llm.BlockEnd{Index: i})
	}
	chunks = append(chunks,
		&llm.UsageChunk{Usage: DefaultUsage},
		&llm.Finish{Reason: llm.FinishToolCalls})
	return Entry{chunks: chunks, provenance: true}
}

// CallTool answers with a single tool call; args is its raw JSON.
func CallTool(id, name, args string) Entry {
	return CallTools(llm.ToolCall{ID: llm.CallID(id), Name: name, Args: json.RawMessage(args)})
}

// MalformedCall answers with a tool call whose arguments are rawArgs
// verbatim, typically text that is not valid JSON, as a model sometimes
// produces.
func MalformedCall(id, name, rawArgs string) Entry {
	return CallTools(llm.ToolCall{ID: llm.CallID(id), Name: name, Args: json.RawMessage(rawArgs)})
}

// Respond decides the response when the request arrives: f sees the
// request (it must not modify it) and returns the Entry to play. An Entry
// returned by f that is itself a Respond is resolved again.
func Respond(f func(req *llm.Request) Entry) Entry {
	return Entry{respond: f}
}

// Hang yields nothing and blocks until the stream's context is done, then
// yields an error wrapping the context's error.
func Hang() Entry { return Entry{end: endHang} }

// HangAfter streams the chunks, then blocks like Hang.
func HangAfter(chunks ...llm.Chunk) Entry {
	e := Chunks(chunks...)
	e.end = endHang
	return e
}

// Fail yields err before any chunk. Through the fake server a
// *llm.ProviderError becomes the provider's HTTP error response (see
// Server); a plain error becomes HTTP 500.
func Fail(err error) Entry { return Entry{end: endFail, err: err} }

// FailAfter streams the chunks, then yields err: an error after HTTP 200.
func FailAfter(err error, chunks ...llm.Chunk) Entry {
	e := Chunks(chunks...)
	e.end = endFail
	e.err = err
	return e
}

// Cut streams the chunks, then ends with no Finish and no error, like a
// connection dropped mid-stream. Through the fake server the connection is
// closed without finishing the response.
func Cut(chunks ...llm.Chunk) Entry {
	return Chunks(chunks...)
}

// WithUsage returns a copy of e that reports u instead of its usage: the
// entry's UsageChunks are replaced by one carrying u, placed before the
// Finish (or last when there is none). On a Respond entry it applies to
// the entry Respond returns; Fail and Hang, which send no response, are
// unchanged.
func (e Entry) WithUsage(u llm.Usage) Entry {
	if e.respond != nil {
		f := e.respond
		e.respond = func(req *llm.Request) Entry { return f(req).WithUsage(u) }
		e.usageSet = true
		return e
	}
	if len(e.chunks) == 0 && e.end != endDone {
		// Fail and Hang send no response to report usage on.
		e.usageSet = true
		return e
	}
	out := make([]llm.Chunk, 0, len(e.chunks)+1)
	at := -1
	for _, c := range e.chunks {
		switch c.(type) {
		case *llm.UsageChunk:
			continue
		case *llm.Finish:
			if at < 0 {
				at = len(out)
			}
		}
		out = append(out, c)
	}
	if at < 0 {
		at = len(out)
	}
	out = append(out[:at], append([]llm.Chunk{&llm.UsageChunk{Usage: u}}, out[at:]...)...)
	e.chunks = out
	e.usageSet = true
	return e
}

// WithDelay returns a copy of e that waits d before its first chunk (or
// its error). The wait ends early, with the context's error, when the
// stream's context is done.
func (e Entry) WithDelay(d time.Duration) Entry {
	e.delay = d
	return e
}

// resolve plays Respond entries until a concrete one remains.
func (e Entry) resolve(req *llm.Request) Entry {
	for depth := 0; e.respond != nil && depth < 100; depth++ {
		delay, usage := e.delay, e.usageSet
		next := e.respond(req)
		if next.delay == 0 {
			next.delay = delay
		}
		next.usageSet = next.usageSet || usage
		e = next
	}
	return e
}

// usage returns the usage the entry reports: the merge of its UsageChunks.
func (e Entry) usage() (llm.Usage, bool) {
	var u llm.Usage
	found := false
	for _, c := range e.chunks {
		if uc, ok := c.(*llm.UsageChunk); ok {
			u.Merge(uc.Usage)
			found = true
		}
	}
	return u, found
}
