package telemetry

// Redactor holds one function per kind of content. Each is applied to
// every piece of its kind before that piece is put on a span; a nil
// function passes content unchanged. Functions may be called from the
// observer's goroutines concurrently and must not block.
type Redactor struct {
	System     func(string) string // system instructions
	Prompt     func(string) string // user, context and steering messages
	ToolInput  func(string) string // tool call arguments (JSON text)
	ToolResult func(string) string // tool results
	Text       func(string) string // the model's response text
	Reasoning  func(string) string // the model's reasoning
	Decision   func(string) string // a decision's question, options and reason
}

// RedactAll returns a Redactor that applies f to every kind of content.
func RedactAll(f func(string) string) *Redactor {
	return &Redactor{System: f, Prompt: f, ToolInput: f, ToolResult: f, Text: f, Reasoning: f, Decision: f}
}

func apply(f func(string) string, s string) string {
	if f == nil {
		return s
	}
	return f(s)
}
