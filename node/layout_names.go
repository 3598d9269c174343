package node

import (
	"io/fs"
	"net"

	"github.com/harn-dev/harn/node/layout"
)

// The data dir's layout, the socket checks and the node key live in
// node/layout, which the client links without the daemon. These names keep
// the node's own code and tests reading as before.

// ErrSocketPermission is wrapped by every *SocketError.
var ErrSocketPermission = layout.ErrSocketPermission

// SocketError says why a client or the node refuses a socket path.
type SocketError = layout.SocketError

// PrivateSocketDir is layout.PrivateSocketDir.
func PrivateSocketDir() string { return layout.PrivateSocketDir() }

// CheckSocket is layout.CheckSocket.
func CheckSocket(path string) error { return layout.CheckSocket(path) }

// DialPermission is layout.DialPermission.
func DialPermission(path string, err error) error { return layout.DialPermission(path, err) }

// CheckPeer is layout.CheckPeer.
func CheckPeer(path string, c net.Conn) error { return layout.CheckPeer(path, c) }

// DefaultDataDir is layout.DefaultDataDir.
func DefaultDataDir() string { return layout.DefaultDataDir() }

// DefaultSocket is layout.DefaultSocket.
func DefaultSocket(dataDir string) string { return layout.DefaultSocket(dataDir) }

// SpoolDir is layout.SpoolDir.
func SpoolDir(dataDir string) string { return layout.SpoolDir(dataDir) }

// ActiveDir is layout.ActiveDir.
func ActiveDir(dataDir string) string { return layout.ActiveDir(dataDir) }

// KeyPath is layout.KeyPath.
func KeyPath(dataDir string) string { return layout.KeyPath(dataDir) }

// TrustDir is layout.TrustDir.
func TrustDir(dataDir string) string { return layout.TrustDir(dataDir) }

// WebURLPath is layout.WebURLPath.
func WebURLPath(dataDir string) string { return layout.WebURLPath(dataDir) }

// WebTokenPath is layout.WebTokenPath.
func WebTokenPath(dataDir string) string { return layout.WebTokenPath(dataDir) }

// LoadOrCreateKey is layout.LoadOrCreateKey.
func LoadOrCreateKey(dataDir string) ([]byte, error) { return layout.LoadOrCreateKey(dataDir) }

// ParseHTTPAddr is layout.ParseHTTPAddr.
func ParseHTTPAddr(s string) (addr string, port int, err error) { return layout.ParseHTTPAddr(s) }

func ownedByMe(fi fs.FileInfo) bool  { return layout.OwnedByMe(fi) }
func ownerWhy(fi fs.FileInfo) string { return layout.OwnerWhy(fi) }
func trustQuote(p string) string     { return layout.Quote(p) }
