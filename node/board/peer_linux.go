package board

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// maxProcLines bounds the lines socketUID reads of /proc/net/tcp.
const maxProcLines = 65536

// socketUID is the uid that owns the loopback client socket at client
// (connected to server): asked of the kernel with one sock_diag request
// for that socket (constant time, as ss(8) does), else read from
// /proc/net/tcp or tcp6 (the line whose local address is the client's and
// remote address the server's).
func socketUID(client, server *net.TCPAddr) (uint32, bool) {
	if uid, ok := diagUID(client, server); ok {
		return uid, true
	}
	return procUID(client, server)
}

// diagUID asks NETLINK_INET_DIAG for the one TCP socket client→server.
func diagUID(client, server *net.TCPAddr) (uint32, bool) {
	fam, src, dst := uint8(unix.AF_INET), client.IP.To4(), server.IP.To4()
	if src == nil || dst == nil {
		fam, src, dst = unix.AF_INET6, client.IP.To16(), server.IP.To16()
	}
	if src == nil || dst == nil {
		return 0, false
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_INET_DIAG)
	if err != nil {
		return 0, false
	}
	defer unix.Close(fd)
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &unix.Timeval{Sec: 1})
	// nlmsghdr (16) + inet_diag_req_v2 (56): family, protocol, ext, pad,
	// states, then the socket id: sport, dport (big endian), src, dst
	// (16 bytes each), interface, cookie (none: all ones)
	req := make([]byte, 72)
	binary.NativeEndian.PutUint32(req[0:], 72)
	binary.NativeEndian.PutUint16(req[4:], unix.SOCK_DIAG_BY_FAMILY)
	binary.NativeEndian.PutUint16(req[6:], unix.NLM_F_REQUEST)
	req[16], req[17] = fam, unix.IPPROTO_TCP
	binary.NativeEndian.PutUint32(req[20:], 0xffffffff)
	id := req[24:]
	binary.BigEndian.PutUint16(id[0:], uint16(client.Port))
	binary.BigEndian.PutUint16(id[2:], uint16(server.Port))
	copy(id[4:20], src)
	copy(id[20:36], dst)
	binary.NativeEndian.PutUint32(id[40:], 0xffffffff)
	binary.NativeEndian.PutUint32(id[44:], 0xffffffff)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return 0, false
	}
	buf := make([]byte, 8192)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	// nlmsghdr (16) + inet_diag_msg: family, state, timer, retrans (4),
	// id (48), expires, rqueue, wqueue (12), uid at 80
	if err != nil || n < 84 || binary.NativeEndian.Uint16(buf[4:]) != unix.SOCK_DIAG_BY_FAMILY {
		return 0, false
	}
	return binary.NativeEndian.Uint32(buf[80:]), true
}

// procUID reads the client socket's owner from /proc/net/tcp or tcp6.
func procUID(client, server *net.TCPAddr) (uint32, bool) {
	file, want := "/proc/net/tcp", procAddr4(client)+" "+procAddr4(server)
	if client.IP.To4() == nil {
		file, want = "/proc/net/tcp6", procAddr6(client)+" "+procAddr6(server)
	}
	f, err := os.Open(file)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 0; sc.Scan() && n < maxProcLines; n++ {
		// sl local rem st tx:rx tr:when retr uid timeout inode ...
		fs := strings.Fields(sc.Text())
		if len(fs) < 8 || fs[1]+" "+fs[2] != want {
			continue
		}
		uid, err := strconv.ParseUint(fs[7], 10, 32)
		return uint32(uid), err == nil
	}
	return 0, false
}

// procAddr4 is an IPv4 address and port as /proc/net/tcp writes them: the
// address as one host-order (little-endian) word in hex.
func procAddr4(a *net.TCPAddr) string {
	ip := a.IP.To4()
	if ip == nil {
		return ""
	}
	return fmt.Sprintf("%08X:%04X", binary.LittleEndian.Uint32(ip), a.Port)
}

// procAddr6 is an IPv6 address and port as /proc/net/tcp6 writes them:
// four host-order words in hex.
func procAddr6(a *net.TCPAddr) string {
	ip := a.IP.To16()
	if ip == nil {
		return ""
	}
	var b strings.Builder
	for i := 0; i < 16; i += 4 {
		fmt.Fprintf(&b, "%08X", binary.LittleEndian.Uint32(ip[i:i+4]))
	}
	return fmt.Sprintf("%s:%04X", b.String(), a.Port)
}
