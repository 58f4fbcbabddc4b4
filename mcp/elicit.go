package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reinhq/rein/tool"
)

// Elicitation modes and actions.
const (
	// ElicitForm asks for values matching a schema; the host shows a form.
	ElicitForm = "form"
	// ElicitURL asks the person to open a URL (to sign in, pay, consent);
	// what they enter there never passes through the host.
	ElicitURL = "url"

	ElicitAccept  = "accept"  // the person answered (form) or agreed to open the URL
	ElicitDecline = "decline" // the person said no
	ElicitCancel  = "cancel"  // the person dismissed the request without choosing
)

// ElicitFunc asks the person using the host for what a server requests
// (elicitation/create). It returns the person's choice; an error is
// reported to the server as a failure, which is not a decline.
type ElicitFunc func(ctx context.Context, req *ElicitRequest) (*ElicitResult, error)

// ElicitRequest is a server's request for input.
type ElicitRequest struct {
	Server  string
	Mode    string // ElicitForm or ElicitURL
	Message string // what the server says the input is for
	// Fields are a form's fields in the schema's order; Schema is the
	// requested schema itself (a flat object of primitive properties,
	// already checked).
	Fields []ElicitField
	Schema json.RawMessage
	// URL is the page a URL-mode request asks the person to open, and
	// ElicitationID the server's id for it.
	URL           string
	ElicitationID string
}

// ElicitField is one property of a form's schema.
type ElicitField struct {
	Name        string   `json:"-"`
	Type        string   `json:"type"` // string, number, integer, boolean or array (of enum values)
	Title       string   `json:"title,omitempty"`
	Description string   `json:"description,omitempty"`
	Format      string   `json:"format,omitempty"` // email, uri, date, date-time
	Enum        []string `json:"enum,omitempty"`
	Default     any      `json:"default,omitempty"`
	Required    bool     `json:"-"`
}

// ElicitResult is the person's answer. Content holds a form's values
// when Action is ElicitAccept; values may be strings where the schema
// wants numbers or booleans ("42", "true"): they are converted, and the
// whole answer is checked against the schema before the server sees it.
type ElicitResult struct {
	Action  string
	Content map[string]any
	// Reason says why, for the record (such as "no terminal to ask on");
	// servers are not told.
	Reason string
}

// elicit answers one elicitation/create request through Options.Elicit,
// recording the outcome as an *Elicited event. The SDK has already
// checked the request's mode and schema.
func (s *server) elicit(ctx context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	p := req.Params
	er := &ElicitRequest{Server: s.cfg.Name, Mode: p.Mode, Message: p.Message, URL: p.URL, ElicitationID: p.ElicitationID}
	if er.Mode == "" {
		er.Mode = ElicitForm
	}
	if er.Mode == ElicitForm {
		schema, err := json.Marshal(p.RequestedSchema)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "mcp: requestedSchema is not JSON"}
		}
		if p.RequestedSchema == nil {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		er.Schema = schema
		if er.Fields, err = formFields(schema); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "mcp: requestedSchema: " + err.Error()}
		}
	}
	ev := &Elicited{Server: s.cfg.Name, Mode: er.Mode, Message: er.Message, URL: er.URL}
	for _, f := range er.Fields {
		ev.Fields = append(ev.Fields, f.Name)
	}
	start := time.Now()
	res, err := s.m.opts.Elicit(ctx, er)
	if err == nil {
		res, err = checkAnswer(er, res)
	}
	ev.Duration = time.Since(start)
	if err != nil {
		ev.Err = err
		s.m.emit(ev)
		return nil, answerError(err)
	}
	ev.Action, ev.Reason = res.Action, res.Reason
	s.m.emit(ev)
	return &sdk.ElicitResult{Action: res.Action, Content: res.Content}, nil
}

// answerError makes a host's failure to answer a server's request a
// JSON-RPC error: the server (or, for a request carried in a call's
// result, the call) fails, and the connection is not taken for broken.
func answerError(err error) error {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		return err
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
}

// checkAnswer validates a host's answer, converting a form's values to
// the schema's types.
func checkAnswer(er *ElicitRequest, res *ElicitResult) (*ElicitResult, error) {
	if res == nil {
		return nil, fmt.Errorf("mcp: the elicitation handler returned no result")
	}
	switch res.Action {
	case ElicitAccept:
	case ElicitDecline, ElicitCancel:
		return &ElicitResult{Action: res.Action, Reason: res.Reason}, nil
	default:
		return nil, fmt.Errorf("mcp: elicitation action %q: use accept, decline or cancel", res.Action)
	}
	if er.Mode != ElicitForm {
		return &ElicitResult{Action: ElicitAccept, Reason: res.Reason}, nil
	}
	raw, err := json.Marshal(res.Content)
	if err != nil {
		return nil, fmt.Errorf("mcp: the form's answer is not JSON: %w", err)
	}
	v, err := tool.NewValidator(er.Schema)
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "mcp: requestedSchema does not compile: " + err.Error()}
	}
	fixed, _, err := v.Validate(raw)
	if err != nil {
		return nil, fmt.Errorf("mcp: the answer does not match the form of server %q: %w", er.Server, err)
	}
	var content map[string]any
	if err := json.Unmarshal(fixed, &content); err != nil {
		return nil, fmt.Errorf("mcp: the form's answer: %w", err)
	}
	return &ElicitResult{Action: ElicitAccept, Content: content, Reason: res.Reason}, nil
}

// formFields lists a form schema's properties in their written order.
func formFields(schema json.RawMessage) ([]ElicitField, error) {
	var top struct {
		Properties json.RawMessage `json:"properties"`
		Required   []string        `json:"required"`
	}
	if err := json.Unmarshal(schema, &top); err != nil {
		return nil, err
	}
	if len(top.Properties) == 0 {
		return nil, nil
	}
	dec := json.NewDecoder(bytes.NewReader(top.Properties))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("properties is not an object")
	}
	var out []ElicitField
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		name, _ := t.(string)
		var raw struct {
			ElicitField
			Items struct {
				Enum []string `json:"enum"`
			} `json:"items"`
			OneOf []struct {
				Const string `json:"const"`
			} `json:"oneOf"`
		}
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("property %q: %w", name, err)
		}
		f := raw.ElicitField
		f.Name = name
		if len(f.Enum) == 0 {
			f.Enum = raw.Items.Enum
		}
		for _, o := range raw.OneOf {
			f.Enum = append(f.Enum, o.Const)
		}
		for _, r := range top.Required {
			f.Required = f.Required || r == name
		}
		out = append(out, f)
	}
	return out, nil
}
