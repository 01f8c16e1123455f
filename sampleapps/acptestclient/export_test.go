package acptestclient

// PromptTextForTest is op's prompt text, padded.
func PromptTextForTest(op *Op) string { return op.promptText() }
