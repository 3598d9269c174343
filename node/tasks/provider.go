package tasks

import (
	"strings"

	"github.com/harn-dev/harn/runtime"
)

// Provider is the node's own model provider: what a harn session runs
// with when its caller names no other (every session from another node;
// a local one that names no URL), and the one place the node's key goes.
type Provider struct {
	Kind   string   // openai (default) or anthropic
	URL    string   // the API's base URL; "": the vendor's
	Key    string   // the node's key (HARN_PROVIDER_KEY or --provider-key-file)
	Models []string // the models a session from another node may name (the first: its default); empty: any
}

// kind is the provider's API, openai by default.
func (p Provider) kind() string {
	if p.Kind == "" {
		return "openai"
	}
	return p.Kind
}

// withNodeProvider fills what a session's options leave to the node: its
// provider's API and URL.
func (h *Host) withNodeProvider(o *HarnOptions) {
	if o.Provider == "" {
		o.Provider = h.cfg.Provider.kind()
	}
	if o.URL == "" && o.Provider == h.cfg.Provider.kind() {
		o.URL = h.cfg.Provider.URL
	}
}

// providerKey is the key a harn session uses: its caller's (a local CLI's
// HARN_PROVIDER_KEY, sent to this node only), else the node's own, and
// that only for the node's own provider (its API and URL): a URL that a
// caller names gets no key of the node's.
func (h *Host) providerKey(o *HarnOptions) string {
	if o.Key != "" {
		return o.Key
	}
	p := h.cfg.Provider
	if o.Provider != p.kind() || strings.TrimRight(o.URL, "/") != strings.TrimRight(p.URL, "/") {
		return ""
	}
	return p.Key
}

// LoopWorkdir is the working directory of a runtime session whose tasks
// reach a loop this node runs (harn's own, or a launcher's or --exec
// agent), by id, prefix or name; ok is false for an external agent's
// session and for one this node does not host.
func (h *Host) LoopWorkdir(handle string) (string, bool) {
	hs := h.resolveHosted(handle)
	if hs == nil || hs.external || (hs.ag == nil && hs.ex == nil) {
		return "", false
	}
	return hs.workdir, true
}

// HeadTask is a session's running or blocked task, "" for none.
func (h *Host) HeadTask(handle string) string {
	id := handle
	if hs := h.resolveHosted(handle); hs != nil {
		id = hs.id
	}
	v, err := h.rt.Session(id)
	if err != nil || v.Task == nil {
		return ""
	}
	return v.Task.ID
}

// TaskGrants are what a task was given.
func (h *Host) TaskGrants(task string) ([]runtime.Grant, error) {
	v, err := h.rt.Grants(task)
	if err != nil {
		return nil, err
	}
	return v.Grants, nil
}

// resolveHosted finds a hosted session by id, else by the node's
// resolution of a prefix or name; nil when there is none.
func (h *Host) resolveHosted(handle string) *hosted {
	if hs := h.lookup(handle); hs != nil || h.cfg.Sessions == nil {
		return hs
	}
	st, err := h.cfg.Sessions.Resolve(handle)
	if err != nil {
		return nil
	}
	return h.lookup(st.SessionID)
}
