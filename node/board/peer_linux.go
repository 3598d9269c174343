package board

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// maxProcLines bounds the lines socketUID reads of /proc/net/tcp.
const maxProcLines = 65536

// socketUID is the uid that owns the loopback client socket at client
// (connected to server), read from /proc/net/tcp or tcp6: the line whose
// local address is the client's and remote address the server's.
func socketUID(client, server *net.TCPAddr) (uint32, bool) {
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
