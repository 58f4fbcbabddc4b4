package session

import "github.com/reinhq/rein/llm"

// commonWord returns the constant whose text b is, for the strings that
// recur in nearly every event (event types, chunk kinds, finish and end
// reasons, sources, triggers, outcomes), so that decoding them allocates
// nothing. ok is false for any other text.
func commonWord(b []byte) (s string, ok bool) {
	switch string(b) {
	case TypeTurnStart:
		return TypeTurnStart, true
	case TypeTurnEnd:
		return TypeTurnEnd, true
	case TypeStepStart:
		return TypeStepStart, true
	case TypeStepEnd:
		return TypeStepEnd, true
	case TypeUserMessage:
		return TypeUserMessage, true
	case TypeContextMessage:
		return TypeContextMessage, true
	case TypeSteeringMessage:
		return TypeSteeringMessage, true
	case TypeAssistantChunk:
		return TypeAssistantChunk, true
	case TypeAssistantMessage:
		return TypeAssistantMessage, true
	case TypeToolCall:
		return TypeToolCall, true
	case TypeToolResult:
		return TypeToolResult, true
	case TypeRepair:
		return TypeRepair, true
	case "text":
		return "text", true
	case "reasoning":
		return "reasoning", true
	case "tool_call":
		return "tool_call", true
	case string(llm.FinishStop):
		return string(llm.FinishStop), true
	case string(llm.FinishToolCalls):
		return string(llm.FinishToolCalls), true
	case string(llm.FinishMaxTokens):
		return string(llm.FinishMaxTokens), true
	case string(llm.FinishAborted):
		return string(llm.FinishAborted), true
	case string(llm.FinishError):
		return string(llm.FinishError), true
	case string(EndCompleted):
		return string(EndCompleted), true
	case string(EndInterrupted):
		return string(EndInterrupted), true
	case string(EndMaxSteps):
		return string(EndMaxSteps), true
	case SourceUser:
		return SourceUser, true
	case SourceHook:
		return SourceHook, true
	case SourceSteer:
		return SourceSteer, true
	case SourceFollowUp:
		return SourceFollowUp, true
	case SourceSystem:
		return SourceSystem, true
	case TriggerPrompt:
		return TriggerPrompt, true
	case TriggerInject:
		return TriggerInject, true
	case TriggerResume:
		return TriggerResume, true
	case OutcomeExecute:
		return OutcomeExecute, true
	}
	return "", false
}
