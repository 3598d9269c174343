package mesh

import (
	"bytes"
)

// seenKey names one origin's key: versions are compared per origin only,
// so that one node's versions (even forged ones) never suppress another's.
type seenKey struct{ origin, key string }

// handleMsg receives one user message, by gossip or by direct send. b is
// only valid during the call.
func (m *Mesh) handleMsg(b []byte) {
	if len(b) == 0 || m.stopped() {
		return
	}
	switch b[0] {
	case msgDelta, msgSignedDelta:
		m.handleDelta(b)
	case msgLeave:
		li, err := decodeLeave(b)
		if err != nil {
			m.drops.malformed.Add(1)
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

// handleDelta checks a delta and, when it is new, gossips it on (epidemic
// spread) and delivers it. With a Signer, only a delta signed by its
// origin passes; the signature is checked once per new version, before
// anything about it is remembered, so that a refused delta leaves no
// trace (it cannot suppress the real one).
func (m *Mesh) handleDelta(b []byte) {
	d, err := decodeDelta(b)
	if err != nil {
		m.drops.malformed.Add(1)
		m.log.Debug("bad delta dropped", "err", err, "n", len(b))
		return
	}
	if d.origin == m.cfg.Name {
		return
	}
	sk := seenKey{d.origin, d.key}
	if !m.newer(sk, d.version) {
		m.duplicates.Add(1)
		return
	}
	if s := m.cfg.Signer; s != nil {
		if !d.signed {
			m.drops.unsigned.Add(1)
			m.log.Debug("unsigned delta dropped", "peer", d.origin, "key", d.key)
			return
		}
		if err := s.Verify(d.origin, signedMsg(deltaDomain, d.body), d.sig); err != nil {
			m.countVerify(err)
			m.log.Debug("delta refused", "peer", d.origin, "key", d.key, "version", d.version, "err", err)
			return
		}
	}
	m.bmu.Lock()
	fresh := m.freshDelta(sk, d.version)
	if fresh {
		m.queue.queue(&broadcast{kind: msgDelta, origin: d.origin, key: d.key, version: d.version, msg: bytes.Clone(b)})
	}
	m.bmu.Unlock()
	if !fresh {
		return
	}
	m.cfg.Handler.ApplyDelta(d.origin, d.key, d.version, bytes.Clone(d.data))
}

// newer reports whether version is newer than any seen for k, without
// remembering it.
func (m *Mesh) newer(k seenKey, version uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.seen[k]
	return !ok || s.version < version
}

// freshDelta records version as the newest of k and reports whether it is
// newer than any seen before. Equal and older versions are duplicates: the
// delta reached this node already, by the other path (direct send or
// gossip) or from another gossiper.
func (m *Mesh) freshDelta(k seenKey, version uint64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.seen[k]; ok && s.version >= version {
		m.duplicates.Add(1)
		return false
	}
	m.seen[k] = seenRec{version: version, at: m.cfg.Clock.Now()}
	return true
}

func (m *Mesh) stopped() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state == stateShutdown
}

// localState is this node's push/pull payload: the Handler's blob and the
// leave intents it knows; with a Signer, its credentials and signature.
func (m *Mesh) localState() []byte {
	if m.stopped() {
		return nil
	}
	blob := m.cfg.Handler.LocalState()
	if len(blob) > m.cfg.MaxStateSize {
		m.log.Warn("own push/pull state is over MaxStateSize; peers will refuse it", "n", len(blob), "limit", m.cfg.MaxStateSize)
	}
	m.mu.Lock()
	intents := make([]leaveIntent, 0, len(m.intents))
	for name, li := range m.intents {
		if len(intents) == maxIntents {
			break
		}
		intents = append(intents, leaveIntent{name: name, instance: li.instance})
	}
	m.mu.Unlock()
	st := pushState{origin: m.cfg.Name, blob: blob, intents: intents}
	s := m.cfg.Signer
	if s == nil {
		return encodeState(st)
	}
	st.signed, st.creds = true, s.Credentials()
	sig, err := s.Sign(signedMsg(stateDomain, encodeStateBody(st)))
	if err != nil {
		m.log.Error("push/pull state not signed; sending none", "err", err)
		return nil
	}
	st.sig = sig
	return encodeState(st)
}

// mergeState receives another node's push/pull payload. With a Signer,
// the credentials are learnt first (the Signer checks each on its own),
// then the state is delivered only if its origin signed it.
func (m *Mesh) mergeState(buf []byte) {
	if len(buf) == 0 || m.stopped() {
		return
	}
	if len(buf) > m.cfg.MaxStateSize {
		m.drops.tooLarge.Add(1)
		m.log.Warn("push/pull state over MaxStateSize dropped", "n", len(buf), "limit", m.cfg.MaxStateSize)
		return
	}
	s, err := decodeState(buf)
	if err != nil {
		m.drops.malformed.Add(1)
		m.log.Debug("bad remote state dropped", "err", err, "n", len(buf))
		return
	}
	if s.origin == m.cfg.Name {
		return
	}
	if sg := m.cfg.Signer; sg != nil {
		if !s.signed {
			m.drops.unsigned.Add(1)
			m.log.Debug("unsigned remote state dropped", "peer", s.origin)
			return
		}
		if err := sg.Learn(s.origin, s.creds); err != nil {
			m.log.Debug("remote credentials refused", "peer", s.origin, "err", err)
		}
		if err := sg.Verify(s.origin, signedMsg(stateDomain, s.body), s.sig); err != nil {
			m.countVerify(err)
			m.log.Debug("remote state refused", "peer", s.origin, "err", err)
			return
		}
	}
	for _, li := range s.intents {
		m.onIntent(li)
	}
	m.cfg.Handler.MergeRemoteState(s.origin, bytes.Clone(s.blob))
}
