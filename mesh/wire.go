package mesh

import (
	"encoding/binary"
	"errors"
)

// MaxFrameSize bounds an encoded delta frame (header plus delta) so that it
// fits one gossip packet: memberlist's UDP buffer is 1,400 bytes, from which
// come the compound header, the encryption overhead (up to 45 bytes), the
// user-message byte, and room for a ping or memberlist's own messages that
// the frame rides along with. On a mesh with a Signer the frame includes
// the signature: a Handler's delta plus its origin and key should stay
// within MaxFrameSize - MaxSignatureSize - 3.
const MaxFrameSize = 1200

// Message types: the first byte of every mesh user message.
const (
	msgDelta       byte = 1 // origin, key, version, delta
	msgLeave       byte = 2 // name, instance: "I am leaving on purpose"
	msgSignedDelta byte = 3 // signature, then a msgDelta's body
)

// State frame versions: the first byte of the push/pull state frame. A
// reader ignores the fields a newer version appends, so version 1 readers
// read version 2 frames (without checking their signature).
const (
	stateVersion       = 1 // origin, blob, intents
	stateVersionSigned = 2 // then credentials and the signature
)

// maxIntents bounds the leave intents one push/pull may carry.
const maxIntents = 4096

var errBadFrame = errors.New("malformed frame")

// delta is one decoded delta message.
type delta struct {
	origin  string
	key     string
	version uint64
	data    []byte
	// signed is set for a msgSignedDelta: sig over deltaDomain and body.
	signed bool
	sig    []byte
	body   []byte
}

// encodeBody lays out a delta's body: origin, key (uvarint length and
// bytes), version (uvarint), then the delta bytes to the end.
func encodeBody(origin, key string, version uint64, data []byte) []byte {
	b := make([]byte, 0, 2*binary.MaxVarintLen16+len(origin)+len(key)+binary.MaxVarintLen64+len(data))
	b = appendString(b, origin)
	b = appendString(b, key)
	b = binary.AppendUvarint(b, version)
	return append(b, data...)
}

// encodeDelta is an unsigned delta frame: the type byte, then the body.
func encodeDelta(origin, key string, version uint64, data []byte) []byte {
	return append([]byte{msgDelta}, encodeBody(origin, key, version, data)...)
}

// signedFrame is a signed delta frame: the type byte, the signature
// (uvarint length and bytes), then the body.
func signedFrame(sig, body []byte) []byte {
	b := make([]byte, 0, 1+binary.MaxVarintLen16+len(sig)+len(body))
	b = append(b, msgSignedDelta)
	b = binary.AppendUvarint(b, uint64(len(sig)))
	b = append(b, sig...)
	return append(b, body...)
}

// signedMsg is what a signature covers: the domain, then the body.
func signedMsg(domain string, body []byte) []byte {
	return append([]byte(domain), body...)
}

// decodeDelta reads a delta frame, signed or not, type byte included. The
// returned slices alias b.
func decodeDelta(b []byte) (delta, error) {
	if len(b) == 0 || (b[0] != msgDelta && b[0] != msgSignedDelta) {
		return delta{}, errBadFrame
	}
	r := reader{b: b[1:]}
	var d delta
	if b[0] == msgSignedDelta {
		d.signed, d.sig = true, r.bytes()
		if r.err == nil && len(d.sig) > MaxSignatureSize {
			return delta{}, errBadFrame
		}
	}
	d.body = r.b
	d.origin, d.key, d.version = r.string(), r.string(), r.uvarint()
	if r.err != nil {
		return delta{}, errBadFrame
	}
	d.data = r.b
	return d, nil
}

// leaveIntent says that instance of node name leaves on purpose.
type leaveIntent struct {
	name     string
	instance uint64
}

func encodeLeave(li leaveIntent) []byte {
	b := []byte{msgLeave}
	b = appendString(b, li.name)
	return binary.BigEndian.AppendUint64(b, li.instance)
}

func decodeLeave(b []byte) (leaveIntent, error) {
	if len(b) == 0 || b[0] != msgLeave {
		return leaveIntent{}, errBadFrame
	}
	r := reader{b: b[1:]}
	li := leaveIntent{name: r.string(), instance: r.uint64()}
	if r.err != nil {
		return leaveIntent{}, errBadFrame
	}
	return li, nil
}

// pushState is what one push/pull carries: who sends it, the Handler's
// blob, and the leave intents the sender knows, so that a node that missed
// one still tells "left" from "dead"; with a Signer, the sender's
// credentials and its signature over everything before it.
type pushState struct {
	origin  string
	blob    []byte
	intents []leaveIntent
	creds   []byte
	sig     []byte
	signed  bool
	// body is the part the signature covers (the frame up to the
	// signature), set by decodeState for a signed frame.
	body []byte
}

// encodeStateBody lays out a state frame up to its signature: version,
// origin, blob, intents, and in a signed frame the credentials.
func encodeStateBody(s pushState) []byte {
	b := make([]byte, 0, 24+len(s.origin)+len(s.blob)+len(s.intents)*24+len(s.creds))
	if s.signed {
		b = append(b, stateVersionSigned)
	} else {
		b = append(b, stateVersion)
	}
	b = appendString(b, s.origin)
	b = binary.AppendUvarint(b, uint64(len(s.blob)))
	b = append(b, s.blob...)
	b = binary.AppendUvarint(b, uint64(len(s.intents)))
	for _, li := range s.intents {
		b = appendString(b, li.name)
		b = binary.BigEndian.AppendUint64(b, li.instance)
	}
	if s.signed {
		b = binary.AppendUvarint(b, uint64(len(s.creds)))
		b = append(b, s.creds...)
	}
	return b
}

// encodeState is the whole frame: the body, then (signed) the signature.
func encodeState(s pushState) []byte {
	b := encodeStateBody(s)
	if s.signed {
		b = binary.AppendUvarint(b, uint64(len(s.sig)))
		b = append(b, s.sig...)
	}
	return b
}

func decodeState(b []byte) (pushState, error) {
	if len(b) == 0 || b[0] < stateVersion {
		return pushState{}, errBadFrame
	}
	r := reader{b: b[1:]}
	s := pushState{origin: r.string(), blob: r.bytes()}
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) || n > maxIntents {
		return pushState{}, errBadFrame
	}
	for i := uint64(0); i < n; i++ {
		s.intents = append(s.intents, leaveIntent{name: r.string(), instance: r.uint64()})
	}
	if r.err == nil && b[0] >= stateVersionSigned {
		s.signed = true
		s.creds = r.bytes()
		s.body = b[:len(b)-len(r.b)]
		s.sig = r.bytes()
		if r.err == nil && len(s.sig) > MaxSignatureSize {
			return pushState{}, errBadFrame
		}
	}
	if r.err != nil {
		return pushState{}, errBadFrame
	}
	return s, nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// reader decodes length-prefixed fields; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errBadFrame
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.err = errBadFrame
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) string() string { return string(r.bytes()) }

func (r *reader) uint64() uint64 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 8 {
		r.err = errBadFrame
		return 0
	}
	v := binary.BigEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}
