package mesh

import (
	"errors"
	"sync/atomic"
)

// Signer signs what this node gossips and checks what the others gossip,
// so that a holder of the gossip key alone cannot speak for a node. mesh
// treats credentials and signatures as opaque bytes; the node implements
// Signer with its mesh certificate (see node's gossip signer). With a
// Signer, only signed deltas and push/pull states are delivered, each for
// the node that signed it; without one (nil: a mesh without a CA), frames
// go out unsigned and every frame is delivered, signed or not.
type Signer interface {
	// Credentials is what a peer needs to check this node's signatures
	// (the node's certificate, and the certificates it knows of others,
	// which a peer checks on its own). It travels in every push/pull.
	Credentials() []byte
	// Sign signs msg with this node's key. The result names the key it
	// was made with (a certificate fingerprint), so that a delta need not
	// carry the certificate, and is at most MaxSignatureSize bytes.
	Sign(msg []byte) ([]byte, error)
	// Learn takes the credentials a push/pull from origin carried. What it
	// keeps it must have checked itself: origin is a claim of the frame.
	Learn(origin string, creds []byte) error
	// Verify checks that sig over msg was made by origin's own key.
	// It wraps ErrUnknownSigner when the key sig names is not known yet
	// (the next push/pull brings it).
	Verify(origin string, msg, sig []byte) error
}

// MaxSignatureSize bounds what Signer.Sign returns. Every delta frame
// keeps room for it (see MaxDeltaSize).
const MaxSignatureSize = 128

// Signature errors; a Signer wraps them so that mesh can count drops.
var (
	// ErrUnknownSigner: the key a signature names is not known yet.
	ErrUnknownSigner = errors.New("mesh: the signer's certificate is not known yet")
	// ErrBadSignature: a frame's signature does not check out, or its
	// signer may not speak for the origin it names.
	ErrBadSignature = errors.New("mesh: bad signature")
)

// Domain prefixes of what is signed: a delta's signature can never pass
// for a state's, nor the reverse.
const (
	deltaDomain = "harn/mesh/delta/1\x00"
	stateDomain = "harn/mesh/state/1\x00"
)

// Drops counts frames that peers sent and this node refused, by cause.
type Drops struct {
	// Unsigned: an unsigned delta or state on a mesh with a Signer.
	Unsigned int64
	// BadSignature: a signature that does not check out, a revoked or
	// foreign certificate, or an origin that is not the signer.
	BadSignature int64
	// UnknownSigner: a delta whose signer's certificate is not known yet.
	UnknownSigner int64
	// TooLarge: a push/pull state over Config.MaxStateSize.
	TooLarge int64
	// Malformed: a frame that does not decode (or over a count bound).
	Malformed int64
}

type dropCounters struct {
	unsigned, badSig, unknown, tooLarge, malformed atomic.Int64
}

// Drops returns the frames refused so far, by cause.
func (m *Mesh) Drops() Drops {
	d := &m.drops
	return Drops{Unsigned: d.unsigned.Load(), BadSignature: d.badSig.Load(), UnknownSigner: d.unknown.Load(),
		TooLarge: d.tooLarge.Load(), Malformed: d.malformed.Load()}
}

// countVerify counts a refused signature by its cause.
func (m *Mesh) countVerify(err error) {
	if errors.Is(err, ErrUnknownSigner) {
		m.drops.unknown.Add(1)
	} else {
		m.drops.badSig.Add(1)
	}
}
