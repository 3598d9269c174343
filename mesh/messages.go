package mesh

import (
	"bytes"
)

// handleMsg receives one user message, by gossip or by direct send. b is
// only valid during the call.
func (m *Mesh) handleMsg(b []byte) {
	if len(b) == 0 || m.stopped() {
		return
	}
	switch b[0] {
	case msgDelta:
		d, err := decodeDelta(b)
		if err != nil {
			m.log.Debug("bad delta dropped", "err", err, "n", len(b))
			return
		}
		if d.origin == m.cfg.Name {
			return
		}
		// New to this node: gossip it on (epidemic spread), then deliver.
		m.bmu.Lock()
		fresh := m.freshDelta(d.key, d.version)
		if fresh {
			m.queue.queue(&broadcast{kind: msgDelta, key: d.key, version: d.version, msg: bytes.Clone(b)})
		}
		m.bmu.Unlock()
		if !fresh {
			return
		}
		m.cfg.Handler.ApplyDelta(d.origin, d.key, d.version, bytes.Clone(d.data))
	case msgLeave:
		li, err := decodeLeave(b)
		if err != nil {
			m.log.Debug("bad leave intent dropped", "err", err)
			return
		}
		if m.onIntent(li) {
			m.queue.queue(&broadcast{kind: msgLeave, key: li.name, msg: bytes.Clone(b)})
		}
	default:
		m.log.Debug("unknown message dropped", "type", b[0])
	}
}

// freshDelta records version as the newest of key and reports whether it
// is newer than any seen before. Equal and older versions are duplicates:
// the delta reached this node already, by the other path (direct send or
// gossip) or from another gossiper.
func (m *Mesh) freshDelta(key string, version uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.seen[key]; ok && s.version >= version {
		m.duplicates.Add(1)
		return false
	}
	m.seen[key] = seenRec{version: version, at: m.cfg.Clock.Now()}
	return true
}

func (m *Mesh) stopped() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state == stateShutdown
}

// localState is this node's push/pull payload: the Handler's blob and the
// leave intents it knows.
func (m *Mesh) localState() []byte {
	if m.stopped() {
		return nil
	}
	blob := m.cfg.Handler.LocalState()
	m.mu.Lock()
	intents := make([]leaveIntent, 0, len(m.intents))
	for name, li := range m.intents {
		intents = append(intents, leaveIntent{name: name, instance: li.instance})
	}
	m.mu.Unlock()
	return encodeState(pushState{origin: m.cfg.Name, blob: blob, intents: intents})
}

// mergeState receives another node's push/pull payload.
func (m *Mesh) mergeState(buf []byte) {
	if len(buf) == 0 || m.stopped() {
		return
	}
	s, err := decodeState(buf)
	if err != nil {
		m.log.Debug("bad remote state dropped", "err", err, "n", len(buf))
		return
	}
	if s.origin == m.cfg.Name {
		return
	}
	for _, li := range s.intents {
		m.onIntent(li)
	}
	m.cfg.Handler.MergeRemoteState(s.origin, bytes.Clone(s.blob))
}
