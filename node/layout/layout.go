// Package layout is the room of the node's data dir as clients see it: where
// the data dir and the socket are, the files in it that a client reads or
// makes (spool, active heartbeats, the node key, the board's URL, the trust
// directory), the socket checks that keep another local user from standing
// in for the node, and the defaults a client names in its flags (ports,
// bounds). It is small and light on purpose: the client (harn) links it, and
// the daemon (harnd, through package node) builds on it. Nothing here opens
// a store or a listener.
package layout

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ErrConfig is the error of a bad node configuration: node and its
// rooms wrap it, and harnd maps it to its exit code.
var ErrConfig = errors.New("invalid node config")

// Default cluster ports.
const (
	DefaultGossipPort = 7710
	DefaultRaftPort   = 7711
	DefaultRPCPort    = 7712
	DefaultHTTPPort   = 7713
)

// DefaultMaxPeerReply is the default bound on a message from a peer on the
// cluster gRPC: 16 MiB.
const DefaultMaxPeerReply = 16 << 20

// DefaultSessionQuota is the live sessions one node may hold in the
// registry when the mesh sets no other quota (raftstore's default; a test
// of package node keeps the two equal).
const DefaultSessionQuota = 5000

// Defaults of the roster's silence and of the peer context's cap.
const (
	DefaultSilenceAfter     = 5 * time.Minute
	DefaultPeerContextBytes = 4 << 10
)

// DefaultDataDir is $XDG_STATE_HOME/harn, or ~/.local/state/harn.
func DefaultDataDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "harn")
	}
	if h, err := os.UserHomeDir(); err == nil {
		return filepath.Join(h, ".local", "state", "harn")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("harn-%d", os.Getuid()))
}

// maxSocketPath keeps a socket path within the kernel's sun_path limit.
const maxSocketPath = 100

// DefaultSocket is the socket for a data dir: in $XDG_RUNTIME_DIR when set
// (named by a hash of the data dir, so that several nodes never share one),
// else harn.sock inside the data dir; a path too long for a unix socket
// moves to the temp dir, inside this user's private directory there
// (PrivateSocketDir, mode 0700), never loose in the shared temp dir.
func DefaultSocket(dataDir string) string {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		abs = dataDir
	}
	sum := sha256.Sum256([]byte(abs))
	tag := hex.EncodeToString(sum[:4])
	if rd := os.Getenv("XDG_RUNTIME_DIR"); rd != "" {
		p := filepath.Join(rd, "harn-"+tag+".sock")
		if len(p) <= maxSocketPath {
			return p
		}
	}
	p := filepath.Join(abs, "harn.sock")
	if len(p) <= maxSocketPath {
		return p
	}
	return filepath.Join(PrivateSocketDir(), tag+".sock")
}

// SpoolDir is where hooks spool events while the node is down.
func SpoolDir(dataDir string) string { return filepath.Join(dataDir, "spool") }

// ActiveDir holds the heartbeat projections of live sessions.
func ActiveDir(dataDir string) string { return filepath.Join(dataDir, "active") }

// KeyPath is the node key used for keyed digests.
func KeyPath(dataDir string) string { return filepath.Join(dataDir, "node.key") }

// TrustDir is the node's trust directory inside its data dir.
func TrustDir(dataDir string) string { return filepath.Join(dataDir, "tls") }

// Files of the web part in the data dir.
const (
	webTokenFile = "http.token"
	webURLFile   = "web.url"
)

// WebURLPath is the file in which a running node keeps its board's URL
// (with the token, mode 0600, in the 0700 data dir); `harn web url` prints
// it.
func WebURLPath(dataDir string) string { return filepath.Join(dataDir, webURLFile) }

// WebTokenPath is the board's generated token (mode 0600), made at the
// first start without --http-token(-file) and kept across restarts.
func WebTokenPath(dataDir string) string { return filepath.Join(dataDir, webTokenFile) }

// LoadOrCreateKey reads the node key used for keyed digests, creating it
// (32 random bytes, mode 0600) when absent. Hooks and the node share it.
func LoadOrCreateKey(dataDir string) ([]byte, error) {
	p := KeyPath(dataDir)
	if b, err := os.ReadFile(p); err == nil && len(b) >= 32 {
		return b[:32], nil
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("node key: %w", err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("node key: %w", err)
	}
	tmp := fmt.Sprintf("%s.tmp-%d", p, os.Getpid())
	if err := os.WriteFile(tmp, key, 0o600); err != nil {
		return nil, fmt.Errorf("node key: %w", err)
	}
	// Link fails if another process made the key first; then use theirs.
	if err := os.Link(tmp, p); err != nil {
		os.Remove(tmp)
		b, rerr := os.ReadFile(p)
		if rerr != nil || len(b) < 32 {
			return nil, fmt.Errorf("node key: %w", err)
		}
		return b[:32], nil
	}
	os.Remove(tmp)
	return key, nil
}

// ErrHTTPAddr: --http-port is neither a port nor host:port.
var ErrHTTPAddr = errors.New("node: bad --http-port; give a port (7713, on 127.0.0.1), host:port (0.0.0.0:7713), or 0 for no board")

// ParseHTTPAddr reads the --http-port value: a port alone binds
// 127.0.0.1, host:port binds host (a port of 0 there picks a free one),
// and "", "0" or "off" serve no board (addr ""). port is the port given.
func ParseHTTPAddr(s string) (addr string, port int, err error) {
	s = strings.TrimSpace(s)
	switch s {
	case "", "0", "off":
		return "", 0, nil
	}
	host, ps := "127.0.0.1", s
	if strings.Contains(s, ":") {
		h, p, err := net.SplitHostPort(s)
		if err != nil {
			return "", 0, fmt.Errorf("%w: %q", ErrHTTPAddr, s)
		}
		host, ps = h, p
	}
	port, err = strconv.Atoi(ps)
	if err != nil || port < 0 || port > 65535 || (port == 0 && !strings.Contains(s, ":")) {
		return "", 0, fmt.Errorf("%w: %q", ErrHTTPAddr, s)
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), port, nil
}

// GossipKeySize is the size of a gossip key (AES-256-GCM).
const GossipKeySize = 32

// ErrGossipKey wraps a gossip key that is not one. Its words are those of
// the mesh's own check (mesh.DecodeKey), which a test of package node keeps
// in step, so that `harn doctor` and `harn node` word a bad key alike.
var ErrGossipKey = errors.New("mesh: invalid config")

// GenerateGossipKey makes a fresh gossip key, base64-encoded.
func GenerateGossipKey() (string, error) {
	k := make([]byte, GossipKeySize)
	if _, err := rand.Read(k); err != nil {
		return "", fmt.Errorf("mesh: generate key: %w", err)
	}
	return base64.StdEncoding.EncodeToString(k), nil
}

// DecodeGossipKey decodes a base64 gossip key and checks its size.
func DecodeGossipKey(s string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("%w: the gossip key is not valid base64 (%v); "+
			"generate one with `openssl rand -base64 32`", ErrGossipKey, err)
	}
	if len(k) != GossipKeySize {
		return nil, fmt.Errorf("%w: the gossip key is %d bytes, want %d; "+
			"generate one with `openssl rand -base64 32`", ErrGossipKey, len(k), GossipKeySize)
	}
	return k, nil
}
