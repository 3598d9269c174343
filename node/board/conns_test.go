package board

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// peerConn is a connection of a named peer (the tracker's tests).
type peerConn struct {
	net.Conn
	peer string
}

func testTracker(maxConns, maxPeer int) *tracker {
	return newTracker(Limits{MaxConns: maxConns, MaxPeerConns: maxPeer}, func(c net.Conn) string { return c.(*peerConn).peer })
}

func conn(t *testing.T, peer string) *peerConn {
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return &peerConn{Conn: a, peer: peer}
}

// TestAPeerHoldsAtMostMaxPeerConnsPendingConnections: a peer's
// connection past MaxPeerConns pending ones is refused at accept; another
// peer's is not; a slot frees when one of the first closes or proves the
// token.
func TestAPeerHoldsAtMostMaxPeerConnsPendingConnections(t *testing.T) {
	tr := testTracker(256, 3)
	var held []*trackedConn
	for range 3 {
		tc, v := tr.admit(conn(t, "uid:1000"))
		if tc == nil || v != nil {
			t.Fatal("a pending connection under the peer's cap was refused")
		}
		held = append(held, tc)
	}
	if tc, _ := tr.admit(conn(t, "uid:1000")); tc != nil {
		t.Fatal("a fourth pending connection of the peer was admitted; the cap is 3")
	}
	if tc, _ := tr.admit(conn(t, "uid:0")); tc == nil {
		t.Fatal("another peer's connection was refused")
	}
	held[0].owner() // proved the token: no longer pending
	if tc, _ := tr.admit(conn(t, "uid:1000")); tc == nil {
		t.Fatal("the peer's slot did not free when its connection became the owner's")
	}
	_ = held[1].Close()
	if tc, _ := tr.admit(conn(t, "uid:1000")); tc == nil {
		t.Fatal("the peer's slot did not free when its connection closed")
	}
}

// TestAFullBoardClosesTheHeaviestPeersOldestPendingConnection: when the
// pending connections fill their three quarters of MaxConns, a newcomer
// whose peer holds fewer closes the oldest pending connection of the peer
// that holds the most; a newcomer of that peer is refused; the owner's
// connections are never closed for room.
func TestAFullBoardClosesTheHeaviestPeersOldestPendingConnection(t *testing.T) {
	tr := testTracker(8, 8) // 6 pending at most
	var flood []*trackedConn
	for range 5 {
		tc, _ := tr.admit(conn(t, "ip:10.0.0.9"))
		flood = append(flood, tc)
	}
	owner, _ := tr.admit(conn(t, "uid:0"))
	owner.owner()
	last, _ := tr.admit(conn(t, "ip:10.0.0.9"))
	if last == nil {
		t.Fatal("the sixth pending connection was refused")
	}
	if tc, v := tr.admit(conn(t, "ip:10.0.0.9")); tc != nil || v != nil {
		t.Fatal("the flooder's own newcomer took a slot from itself")
	}
	tc, v := tr.admit(conn(t, "ip:10.0.0.7"))
	if tc == nil || v != flood[0] {
		t.Fatalf("a newcomer of another peer: admitted %v, closed %v; want it in and the flooder's oldest closed", tc != nil, v)
	}
	total, pending, seen := tr.stats()
	if total != 7 || pending != 6 || seen.Evicted != 1 || seen.RefusedPeer+seen.RefusedFull != 1 {
		t.Fatalf("total %d pending %d %+v", total, pending, seen)
	}
	// the whole cap: the owner's connections fill it; a pending one still
	// makes room, an owner's never does
	for range 1 {
		o, _ := tr.admit(conn(t, "uid:0"))
		if o == nil {
			t.Fatal("refused")
		}
	}
	if tc, v := tr.admit(conn(t, "ip:10.0.0.5")); tc == nil || v == nil || v.peer != "ip:10.0.0.9" {
		t.Fatal("at the whole cap, a newcomer did not take the heaviest peer's pending slot")
	}
	if owner.state != connOwner {
		t.Fatal("the owner's connection was closed for room")
	}
	// two peers of 3 each fill the pending share: a third newcomer of
	// either is refused (no peer holds more than it), one of a new peer
	// takes the oldest of one of them
	even := testTracker(8, 8)
	for range 3 {
		even.admit(conn(t, "ip:a"))
		even.admit(conn(t, "ip:b"))
	}
	if tc, v := even.admit(conn(t, "ip:a")); tc != nil || v != nil {
		t.Fatal("a peer's newcomer took the slot of a peer holding as many")
	}
	if tc, v := even.admit(conn(t, "ip:c")); tc == nil || v == nil {
		t.Fatal("a new peer did not get in")
	}
	if _, _, seen := even.stats(); seen.RefusedFull != 1 || seen.Evicted != 1 {
		t.Fatalf("%+v", seen)
	}
}

// TestALoopbackPeerIsItsLocalUser: a loopback client's peer is the uid
// that owns its socket (read from /proc/net/tcp), so that local users do
// not share one slot count.
func TestALoopbackPeerIsItsLocalUser(t *testing.T) {
	if _, err := os.Stat("/proc/net/tcp"); err != nil {
		t.Skip("no /proc/net/tcp on this system: a loopback peer is its address")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got, want := peerOf(s), fmt.Sprintf("uid:%d", os.Getuid()); got != want {
		t.Fatalf("peer %q, want %q", got, want)
	}
}

// TestAPendingConnectionWithoutItsHeadersIsCutAtTheHeaderTimeout: a
// connection that sends part of its headers and stops is closed by the
// board at ReadHeaderTimeout (3 s by default), and its slot frees.
func TestAPendingConnectionWithoutItsHeadersIsCutAtTheHeaderTimeout(t *testing.T) {
	if DefaultLimits.ReadHeaderTimeout > 3*time.Second {
		t.Fatalf("the default header timeout is %s; one local user could hold slots that long", DefaultLimits.ReadHeaderTimeout)
	}
	s, _ := openServer(t, func(c *Config) { c.Limits.ReadHeaderTimeout = 200 * time.Millisecond })
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := bufio.NewReader(c).ReadString('\n'); err == nil {
		// the server may answer 408 before it closes
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if open, _, _ := s.Admission(); open == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slow connection still holds its slot")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// and the owner's request marks its connection as the owner's
	req, _ := http.NewRequest("GET", "http://"+s.Addr()+"/", nil)
	req.Header.Set("Authorization", "Bearer "+secret)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	res, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body) // read whole: the connection stays for the next request
	res.Body.Close()
	if open, pending, _ := s.Admission(); open != 1 || pending != 0 {
		t.Fatalf("after the owner's request: %d open, %d pending; want its keep-alive connection, not pending", open, pending)
	}
}
