package wire

// Diagnostic is a record of bad input the node received.
type Diagnostic struct {
	Seq         uint64 `json:"seq"`
	TS          string `json:"ts"`
	Source      string `json:"source"`
	Error       string `json:"error"`
	InputBytes  int    `json:"input_bytes,omitempty"`
	InputDigest string `json:"input_digest,omitempty"`
}
