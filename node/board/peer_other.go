//go:build !linux

package board

import "net"

// socketUID: only Linux tells a loopback socket's owner here; elsewhere
// every loopback client is one peer (its address).
func socketUID(_, _ *net.TCPAddr) (uint32, bool) { return 0, false }
