package board

import (
	"net"
	"os"
	"testing"
)

// TestBothWaysOfReadingASocketsOwnerAgree: the sock_diag request and
// /proc/net/tcp name the same uid for a loopback client.
func TestBothWaysOfReadingASocketsOwnerAgree(t *testing.T) {
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
	client, server := s.RemoteAddr().(*net.TCPAddr), s.LocalAddr().(*net.TCPAddr)
	d, dok := diagUID(client, server)
	p, pok := procUID(client, server)
	if !dok || !pok || d != p || d != uint32(os.Getuid()) {
		t.Fatalf("sock_diag %d (%v), /proc %d (%v); want both %d", d, dok, p, pok, os.Getuid())
	}
}
