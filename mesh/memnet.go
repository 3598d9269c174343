package mesh

import (
	"bytes"
	"compress/lzw"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
)

// MemNetwork is an in-process network for tests, in the manner of
// memberlist's MockNetwork, with what MockNetwork lacks for failure tests:
// it is safe to add transports while others run, a packet to a stopped or
// unknown address is dropped like a UDP datagram instead of blocking its
// sender forever, a stream to one fails, and it can be partitioned.
type MemNetwork struct {
	mu     sync.Mutex
	port   int
	byAddr map[string]*MemTransport
	group  map[string]int // addr -> partition group; absent = reaches all
	lzw    atomic.Bool    // EmulateCompression
	idle   atomic.Bool    // Meter(false): nothing is counted
}

// Meter turns the counting of sent bytes on (the default) or off. With
// EmulateCompression a count costs a compression, so a simulation meters
// only the windows it measures.
func (n *MemNetwork) Meter(on bool) { n.idle.Store(!on) }

// EmulateCompression makes the meshes on the network skip memberlist's
// LZW compression, while every transport counts what it sends at the
// size that compression gives it: a packet compressed when that makes it
// smaller, a stream message always, each in memberlist's compress frame.
// The bytes counted are the same, and a simulation of many nodes in one
// process spares memberlist's fresh 64 KiB table per packet (the
// garbage of a thousand nodes) and the receivers' decompression. It
// holds for meshes without a gossip key (encryption comes after
// compression, and its frame is opaque). Call it before the first
// NewTransport.
func (n *MemNetwork) EmulateCompression() { n.lzw.Store(true) }

// NewTransport returns a transport at a new address on the network.
func (n *MemNetwork) NewTransport() *MemTransport {
	n.mu.Lock()
	n.port++
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(20000+n.port))
	n.mu.Unlock()
	return n.Listen(addr)
}

// Listen returns a transport at addr ("127.0.0.1:port"), replacing a
// stopped one there: a node restarting at its old address.
func (n *MemNetwork) Listen(addr string) *MemTransport {
	t := &MemTransport{
		net:      n,
		addr:     addr,
		packetCh: make(chan *memberlist.Packet, 1024),
		streamCh: make(chan net.Conn),
		done:     make(chan struct{}),
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.byAddr == nil {
		n.byAddr = make(map[string]*MemTransport)
	}
	n.byAddr[addr] = t
	return t
}

// Partition splits the network: addresses in different groups no longer
// reach each other; addresses in no group reach everyone.
func (n *MemNetwork) Partition(groups ...[]string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.group = make(map[string]int)
	for i, g := range groups {
		for _, a := range g {
			n.group[a] = i
		}
	}
}

// Heal removes every partition.
func (n *MemNetwork) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.group = nil
}

// route finds the live transport at addr that from may reach.
func (n *MemNetwork) route(from, addr string) (*MemTransport, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	t, ok := n.byAddr[addr]
	if !ok || t.stopped() {
		return nil, fmt.Errorf("memnet: connection refused: %s", addr)
	}
	gf, okf := n.group[from]
	gt, okt := n.group[addr]
	if okf && okt && gf != gt {
		return nil, fmt.Errorf("memnet: no route to %s (partitioned)", addr)
	}
	return t, nil
}

// MemTransport is one node's end of a MemNetwork.
type MemTransport struct {
	net      *MemNetwork
	addr     string
	sent     atomic.Int64 // bytes this end sent: packets and streams
	packetCh chan *memberlist.Packet
	streamCh chan net.Conn
	done     chan struct{}
	once     sync.Once
}

var _ memberlist.NodeAwareTransport = (*MemTransport)(nil)

// Addr is the transport's "host:port".
func (t *MemTransport) Addr() string { return t.addr }

// SentBytes is how many bytes this end sent, packets and streams, while
// its network metered (the simulation's bytes per node).
func (t *MemTransport) SentBytes() int64 { return t.sent.Load() }

func (t *MemTransport) stopped() bool {
	select {
	case <-t.done:
		return true
	default:
		return false
	}
}

type memAddr string

func (a memAddr) Network() string { return "mem" }
func (a memAddr) String() string  { return string(a) }

// FinalAdvertiseAddr implements memberlist.Transport.
func (t *MemTransport) FinalAdvertiseAddr(string, int) (net.IP, int, error) {
	host, port, err := net.SplitHostPort(t.addr)
	if err != nil {
		return nil, 0, err
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return nil, 0, err
	}
	return net.ParseIP(host), p, nil
}

// WriteTo implements memberlist.Transport.
func (t *MemTransport) WriteTo(b []byte, addr string) (time.Time, error) {
	return t.WriteToAddress(b, memberlist.Address{Addr: addr})
}

// WriteToAddress implements memberlist.NodeAwareTransport. Like UDP, a
// packet nobody can receive is dropped without an error.
func (t *MemTransport) WriteToAddress(b []byte, a memberlist.Address) (time.Time, error) {
	now := time.Now()
	if t.stopped() {
		return now, fmt.Errorf("memnet: transport stopped")
	}
	if !t.net.idle.Load() {
		t.sent.Add(int64(t.net.packetSize(b)))
	}
	dest, err := t.net.route(t.addr, a.Addr)
	if err != nil {
		return now, nil
	}
	p := &memberlist.Packet{Buf: bytes.Clone(b), From: memAddr(t.addr), Timestamp: now}
	select {
	case dest.packetCh <- p:
	default: // receiver's buffer full: lost, like UDP
	}
	return now, nil
}

// PacketCh implements memberlist.Transport.
func (t *MemTransport) PacketCh() <-chan *memberlist.Packet { return t.packetCh }

// IngestPacket implements memberlist.NodeAwareTransport.
func (t *MemTransport) IngestPacket(conn net.Conn, addr net.Addr, now time.Time, shouldClose bool) error {
	if shouldClose {
		defer conn.Close()
	}
	var buf bytes.Buffer
	if _, err := io.Copy(&buf, conn); err != nil {
		return fmt.Errorf("memnet: read packet: %w", err)
	}
	select {
	case t.packetCh <- &memberlist.Packet{Buf: buf.Bytes(), From: addr, Timestamp: now}:
	case <-t.done:
	}
	return nil
}

// DialTimeout implements memberlist.Transport.
func (t *MemTransport) DialTimeout(addr string, timeout time.Duration) (net.Conn, error) {
	return t.DialAddressTimeout(memberlist.Address{Addr: addr}, timeout)
}

// DialAddressTimeout implements memberlist.NodeAwareTransport: a net.Pipe
// handed to the destination's stream channel.
func (t *MemTransport) DialAddressTimeout(a memberlist.Address, timeout time.Duration) (net.Conn, error) {
	if t.stopped() {
		return nil, fmt.Errorf("memnet: transport stopped")
	}
	dest, err := t.net.route(t.addr, a.Addr)
	if err != nil {
		return nil, err
	}
	local, remote := net.Pipe()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case dest.streamCh <- &memConn{Conn: remote, local: memAddr(dest.addr), remote: memAddr(t.addr), sent: &dest.sent, net: t.net}:
		return &memConn{Conn: local, local: memAddr(t.addr), remote: memAddr(dest.addr), sent: &t.sent, net: t.net}, nil
	case <-dest.done:
	case <-t.done:
	case <-timer.C:
	}
	_ = local.Close()
	_ = remote.Close()
	return nil, fmt.Errorf("memnet: dial %s: timeout or stopped", a.Addr)
}

// StreamCh implements memberlist.Transport.
func (t *MemTransport) StreamCh() <-chan net.Conn { return t.streamCh }

// IngestStream implements memberlist.NodeAwareTransport.
func (t *MemTransport) IngestStream(conn net.Conn) error {
	select {
	case t.streamCh <- conn:
		return nil
	case <-t.done:
		return fmt.Errorf("memnet: transport stopped")
	}
}

// Shutdown implements memberlist.Transport: the address stops answering.
func (t *MemTransport) Shutdown() error {
	t.once.Do(func() { close(t.done) })
	return nil
}

// memConn gives a net.Pipe end the addresses of its two transports, and
// counts what it writes.
type memConn struct {
	net.Conn
	local, remote net.Addr
	sent          *atomic.Int64
	net           *MemNetwork
}

// Write counts what it writes before it writes it, so that the count is
// there when the reader has the bytes (a write that fails, its peer gone,
// counts all the same). memberlist writes each stream message in one
// Write, so with EmulateCompression a write is one message.
func (c *memConn) Write(b []byte) (int, error) {
	if c.sent != nil && (c.net == nil || !c.net.idle.Load()) {
		if c.net != nil && c.net.lzw.Load() {
			c.sent.Add(int64(lzwFrameSize(b)))
		} else {
			c.sent.Add(int64(len(b)))
		}
	}
	return c.Conn.Write(b)
}

// mlHasCrcMsg is memberlist's hasCrcMsg: the type of a packet behind a
// CRC header (its net.go).
const mlHasCrcMsg = 12

// packetSize is the size b has on the wire: with EmulateCompression, as
// memberlist's rawSendMsgPacket makes it (the payload compressed when
// that makes it smaller, behind the CRC header when there is one).
func (n *MemNetwork) packetSize(b []byte) int {
	if !n.lzw.Load() {
		return len(b)
	}
	head, body := 0, b
	if len(b) > 5 && b[0] == mlHasCrcMsg {
		head, body = 5, b[5:]
	}
	return head + min(len(body), lzwFrameSize(body))
}

// lzwWriters are reused LZW writers (Reset), and lzwCounter what they
// write to: counting bytes only.
var lzwWriters = sync.Pool{New: func() any { return lzw.NewWriter(io.Discard, lzw.LSB, 8) }}

type byteCounter int

func (c *byteCounter) Write(b []byte) (int, error) { *c += byteCounter(len(b)); return len(b), nil }

// lzwFrameSize is the size of memberlist's compressPayload(b): a
// compressMsg byte, then the msgpack map {Algo: 0, Buf: LZW(b)}, whose
// Buf is a msgpack string (memberlist's handle writes []byte as str).
func lzwFrameSize(b []byte) int {
	w := lzwWriters.Get().(*lzw.Writer)
	var c byteCounter
	w.Reset(&c, lzw.LSB, 8)
	_, _ = w.Write(b)
	_ = w.Close()
	lzwWriters.Put(w)
	l := int(c)
	var strHead int
	switch {
	case l < 32:
		strHead = 1
	case l < 1<<16:
		strHead = 3
	default:
		strHead = 5
	}
	// type byte, map header, "Algo" and 0, "Buf" and its string header.
	return 1 + 1 + 5 + 1 + 4 + strHead + l
}

func (c *memConn) LocalAddr() net.Addr  { return c.local }
func (c *memConn) RemoteAddr() net.Addr { return c.remote }
