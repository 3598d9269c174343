package tasks

import (
	"github.com/harn-dev/harn/runtime"
	"github.com/harn-dev/harn/runtime/agent"
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
	if o.Provider != p.kind() || baseURL(o.Provider, o.URL) != baseURL(p.kind(), p.URL) {
		return ""
	}
	return p.Key
}

// baseURL is a provider's base URL as its client posts to it (with or
// without /v1, a trailing slash: one URL).
func baseURL(kind, u string) string {
	if kind == "anthropic" {
		return agent.AnthropicBaseURL(u)
	}
	return agent.OpenAIBaseURL(u)
}

// LoopWorkdir is the working directory of a runtime session whose tasks
// reach a loop this node runs (harn's own, or a launcher's or --exec
// agent), by id, prefix or name; ok is false for an external agent's
// session and for one this node does not host.
func (h *Host) LoopWorkdir(handle string) (string, bool) {
	hs := h.resolveHosted(handle)
	if hs == nil {
		// a harn session this run does not host (the node restarted): a
		// follow-up may open it again, in its stored directory
		id := handle
		if h.cfg.Sessions != nil {
			if st, err := h.cfg.Sessions.Resolve(handle); err == nil {
				id = st.SessionID
			}
		}
		if rec, found, err := h.loadSession(id); err == nil && found {
			return rec.Workdir, true
		}
		return "", false
	}
	if hs.external || (hs.ag == nil && hs.ex == nil) {
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

// HeldGrants are the grants a session holds for its later tasks (the ones
// its first task fixed, also for a harn session reopened from its record
// after a restart); ok is false when the session is unknown or none are
// fixed yet.
func (h *Host) HeldGrants(handle string) ([]runtime.Grant, bool) {
	id := handle
	if hs := h.resolveHosted(handle); hs != nil {
		id = hs.id
	}
	if g, err := h.rt.SessionGrants(id); err == nil && len(g) > 0 {
		return g, true
	}
	if h.cfg.KV == nil {
		return nil, false
	}
	rec, ok, err := h.loadSession(id)
	if err != nil || !ok || len(rec.Grants) == 0 {
		return nil, false
	}
	return rec.Grants, true
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
