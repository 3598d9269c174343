package wire

// WebhookView is one webhook as `harn notify list` shows it: the mesh's
// configuration (its URL redacted to scheme and host) and this node's
// delivery counts.
type WebhookView struct {
	ID          string   `json:"id"`
	URL         string   `json:"url"`
	Format      string   `json:"format"`
	On          []string `json:"on"`
	Queued      int      `json:"queued"`
	Sent        uint64   `json:"sent"`
	Failed      uint64   `json:"failed"`
	Dropped     uint64   `json:"dropped"`
	Retries     uint64   `json:"retries"`
	LastError   string   `json:"last_error,omitempty"`
	LastErrorAt string   `json:"last_error_at,omitempty"`
}

// DesktopView is this node's desktop notifier and its counts.
type DesktopView struct {
	// Enabled: asked for, and notify-send or osascript exists. Asked:
	// asked for, but neither exists (nothing is shown).
	Enabled bool   `json:"enabled"`
	Asked   bool   `json:"asked,omitempty"`
	Shown   uint64 `json:"shown"`
	Failed  uint64 `json:"failed"`
	Dropped uint64 `json:"dropped"`
}
