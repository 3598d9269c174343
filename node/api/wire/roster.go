package wire

// ReadInfo says how a roster read was made and how stale it may be.
type ReadInfo struct {
	Consistent   bool   `json:"consistent"`
	Stale        bool   `json:"stale"`
	LeaderID     string `json:"leader,omitempty"`
	LastContact  string `json:"last_contact,omitempty"`
	AppliedIndex uint64 `json:"applied_index,omitempty"`
	Mesh         bool   `json:"mesh"`
}
