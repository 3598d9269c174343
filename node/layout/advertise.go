package layout

import (
	"errors"
	"net"
)

// ErrNoAdvertise: no address to advertise was found.
var ErrNoAdvertise = errors.New("node: no address to advertise; pass --advertise")

// AdvertiseHost is the address other nodes reach this one at: advertise
// when set, else bind when it names one address, else the first private
// IPv4 address of this machine's interfaces (else its first non-loopback
// one). The node and the hints that name its address (harn token create)
// share it, so that a printed --join is where the node listens.
func AdvertiseHost(advertise, bind string) (string, error) {
	if advertise != "" {
		return advertise, nil
	}
	if ip := net.ParseIP(bind); ip != nil && !ip.IsUnspecified() {
		return bind, nil
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return "", err
	}
	var fallback string
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.To4() == nil || ipn.IP.IsLoopback() {
			continue
		}
		if ipn.IP.IsPrivate() {
			return ipn.IP.String(), nil
		}
		if fallback == "" {
			fallback = ipn.IP.String()
		}
	}
	if fallback != "" {
		return fallback, nil
	}
	return "", ErrNoAdvertise
}
