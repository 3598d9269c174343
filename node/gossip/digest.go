package gossip

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
)

// DigestKey is the gossip key of a node's presence digest. Session ids
// never start with NUL, so it cannot collide with one.
const DigestKey = "\x00digest"

// Digest hashes (session id, presence hash) pairs of live sessions in id
// order: two nodes holding the same live presence for a node compute the
// same digest. It sorts pairs in place.
func Digest(pairs [][2]string) string {
	sort.Slice(pairs, func(i, j int) bool { return pairs[i][0] < pairs[j][0] })
	h := sha256.New()
	for _, p := range pairs {
		h.Write([]byte(p[0]))
		h.Write([]byte{0})
		h.Write([]byte(p[1]))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}
