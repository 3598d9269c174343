package mesh

import (
	"encoding/binary"
	"errors"
)

// MaxFrameSize bounds an encoded delta frame (header plus delta) so that it
// fits one gossip packet: memberlist's UDP buffer is 1,400 bytes, from which
// come the compound header, the encryption overhead (up to 45 bytes), the
// user-message byte, and room for a ping or memberlist's own messages that
// the frame rides along with.
const MaxFrameSize = 1200

// Message types: the first byte of every mesh user message.
const (
	msgDelta byte = 1 // origin, key, version, delta
	msgLeave byte = 2 // name, instance: "I am leaving on purpose"
)

// stateVersion is the first byte of the push/pull state frame.
const stateVersion = 1

var errBadFrame = errors.New("malformed frame")

// delta is one decoded delta message.
type delta struct {
	origin  string
	key     string
	version uint64
	data    []byte
}

// encodeDelta lays out: type, origin, key (uvarint length and bytes),
// version (uvarint), then the delta bytes to the end.
func encodeDelta(origin, key string, version uint64, data []byte) []byte {
	b := make([]byte, 0, 1+2*binary.MaxVarintLen16+len(origin)+len(key)+binary.MaxVarintLen64+len(data))
	b = append(b, msgDelta)
	b = appendString(b, origin)
	b = appendString(b, key)
	b = binary.AppendUvarint(b, version)
	return append(b, data...)
}

// decodeDelta reads a delta frame, type byte included. The returned data
// aliases b.
func decodeDelta(b []byte) (delta, error) {
	if len(b) == 0 || b[0] != msgDelta {
		return delta{}, errBadFrame
	}
	r := reader{b: b[1:]}
	d := delta{origin: r.string(), key: r.string(), version: r.uvarint()}
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
// one still tells "left" from "dead".
type pushState struct {
	origin  string
	blob    []byte
	intents []leaveIntent
}

func encodeState(s pushState) []byte {
	b := make([]byte, 0, 16+len(s.origin)+len(s.blob)+len(s.intents)*24)
	b = append(b, stateVersion)
	b = appendString(b, s.origin)
	b = binary.AppendUvarint(b, uint64(len(s.blob)))
	b = append(b, s.blob...)
	b = binary.AppendUvarint(b, uint64(len(s.intents)))
	for _, li := range s.intents {
		b = appendString(b, li.name)
		b = binary.BigEndian.AppendUint64(b, li.instance)
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
	if r.err != nil || n > uint64(len(r.b)) {
		return pushState{}, errBadFrame
	}
	for i := uint64(0); i < n; i++ {
		s.intents = append(s.intents, leaveIntent{name: r.string(), instance: r.uint64()})
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
