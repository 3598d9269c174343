package notify

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Where a webhook may post. A webhook is set for the whole mesh and every
// node delivers its own sessions' messages, so a webhook is a request that
// every node makes an HTTP POST to an address of someone else's choosing.
// The node refuses addresses inside its own networks (loopback, link-local,
// private, unspecified, multicast) unless its operator started it with
// --allow-private: once when the webhook is added (CheckTarget), and again
// at every connection (the dialer's Control hook sees the address actually
// dialed, after DNS), so a name that resolves to a public address when it is
// added and to 127.0.0.1 later reaches nothing.

// AllowPrivateFlag is the node flag that lets webhooks reach private
// addresses; refusals name it.
const AllowPrivateFlag = "--allow-private"

// ErrPrivateTarget is the sentinel under a refused webhook address (a
// *TargetError).
var ErrPrivateTarget = errors.New("notify: webhook address is inside the node's own networks")

// TargetError is a webhook address the node refuses to post to.
type TargetError struct {
	// Addr is the refused address (an IP, or a host name that resolved to
	// it); Class names what it is (loopback, private, ...).
	Addr  string
	Class string
}

func (e *TargetError) Error() string {
	return fmt.Sprintf("notify: webhook address %s is %s, inside the node's own networks; start the node with %s to allow it",
		e.Addr, e.Class, AllowPrivateFlag)
}

// Unwrap makes a TargetError match ErrPrivateTarget.
func (e *TargetError) Unwrap() error { return ErrPrivateTarget }

// Permanent: retrying a refused address cannot help.
func (e *TargetError) Permanent() bool { return true }

// cgnat is the shared address space of RFC 6598 (carrier-grade NAT).
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// AddrClass names why ip is refused as a webhook target, or "" when it is a
// public address.
func AddrClass(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case !ip.IsValid():
		return "not an address"
	case ip.IsLoopback():
		return "a loopback address"
	case ip.IsUnspecified():
		return "the unspecified address"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "a link-local address"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "a multicast address"
	case ip.IsPrivate():
		return "a private address"
	case cgnat.Contains(ip):
		return "a shared (CGNAT) address"
	case ip.Is4() && ip.As4() == [4]byte{255, 255, 255, 255}:
		return "the broadcast address"
	}
	return ""
}

// checkIP refuses ip unless allowPrivate; name is what the error shows
// (the host name as given, with the address it resolved to).
func checkIP(name string, ip netip.Addr, allowPrivate bool) error {
	if allowPrivate {
		return nil
	}
	if c := AddrClass(ip); c != "" {
		return &TargetError{Addr: name, Class: c}
	}
	return nil
}

// resolveTimeout bounds the name lookup of CheckTarget.
const resolveTimeout = 2 * time.Second

// CheckTarget refuses a webhook URL whose host is, or resolves to, an
// address inside the node's own networks, unless allowPrivate. A name that
// does not resolve now is accepted: the dial-time check still holds.
func CheckTarget(ctx context.Context, rawURL string, allowPrivate bool) error {
	if allowPrivate {
		return nil
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil // Validate reports it
	}
	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if ip, err := netip.ParseAddr(host); err == nil {
		return checkIP(host, ip, false)
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return &TargetError{Addr: host, Class: "a loopback name"}
	}
	ctx, cancel := context.WithTimeout(ctx, resolveTimeout)
	defer cancel()
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil
	}
	for _, ip := range ips {
		if err := checkIP(host+" ("+ip.Unmap().String()+")", ip, false); err != nil {
			return err
		}
	}
	return nil
}

// dialControl is the dialer's Control hook: it sees the address about to
// be connected, after the name was resolved.
func dialControl(allowPrivate bool) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		if allowPrivate {
			return nil
		}
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &TargetError{Addr: address, Class: "not an address"}
		}
		return checkIP(ap.Addr().Unmap().String(), ap.Addr(), false)
	}
}
