package session

// Internals the external tests check.
var (
	AppendPayloadDirect = appendPayloadDirect
	FastSamples         = fastSamples
)
