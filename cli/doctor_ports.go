package cli

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
)

// portSpec is one of the node's listeners: its name, its flag and port,
// and whether it also listens on UDP (gossip).
type portSpec struct {
	name, flag string
	port       int
	udp        bool
}

// checkPorts: each port the node uses is free, or held by the node that
// answers. A port of 0 is picked at start and needs no check.
func checkPorts(e doctorEnv, st *api.StatusResponse) []check {
	if e.noMesh {
		return []check{{"ports", checkSkip, "--no-mesh: the node opens no network listener", ""}}
	}
	bind := e.bind
	if bind == "" {
		bind = "127.0.0.1"
		if e.mesh {
			bind = "0.0.0.0"
		}
	}
	var out []check
	for _, ps := range e.ports {
		if ps.port <= 0 {
			continue
		}
		name := fmt.Sprintf("port %d (%s)", ps.port, ps.name)
		nets := []string{"tcp"}
		if ps.udp {
			nets = append(nets, "udp")
		}
		var busy []string
		var failed error
		for _, nw := range nets {
			err := tryListen(nw, net.JoinHostPort(bind, strconv.Itoa(ps.port)))
			switch {
			case errors.Is(err, syscall.EADDRINUSE):
				busy = append(busy, nw)
			case err != nil && failed == nil:
				failed = fmt.Errorf("%s: %w", nw, err)
			}
		}
		owner := ownerOther
		if st != nil && len(busy) > 0 {
			owner = ownsPort(int(st.Pid), ps.port, busy)
		}
		switch {
		case failed != nil:
			out = append(out, check{name, checkFinding, fmt.Sprintf("cannot listen on %s: %v", bind, failed),
				fmt.Sprintf("pick another with --%s (%s) or another --bind", ps.flag, hook.EnvName(ps.flag))})
		case len(busy) == 0:
			out = append(out, check{name, checkOK, "free on " + bind, ""})
		case owner == ownerNode:
			out = append(out, check{name, checkOK, fmt.Sprintf("held by the node (pid %d)", st.Pid), ""})
		case owner == ownerUnknown:
			out = append(out, check{name, checkOK, "in use while the node runs; taken to be the node's (this system does not say which process holds it)", ""})
		default:
			out = append(out, check{name, checkFinding, fmt.Sprintf("in use (%s) by another process", strings.Join(busy, ", ")),
				fmt.Sprintf("stop that process, or give the node another port with --%s (%s, or %s in the config file)", ps.flag, hook.EnvName(ps.flag), ps.flag)})
		}
	}
	return out
}

// tryListen binds addr for a moment.
func tryListen(nw, addr string) error {
	if nw == "udp" {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return err
		}
		return pc.Close()
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	return l.Close()
}

type portOwner int

const (
	ownerUnknown portOwner = iota
	ownerNode
	ownerOther
)

// ownsPort tells whether process pid holds the port on every network in
// nets, from /proc (Linux); elsewhere it does not know.
func ownsPort(pid, port int, nets []string) portOwner {
	fds, err := socketInodes(pid)
	if err != nil {
		return ownerUnknown
	}
	for _, nw := range nets {
		inodes, err := listenInodes(nw, port)
		if err != nil {
			return ownerUnknown
		}
		held := false
		for _, in := range inodes {
			held = held || fds[in]
		}
		if !held {
			return ownerOther
		}
	}
	return ownerNode
}

// socketInodes lists the socket inodes of pid's open files.
func socketInodes(pid int) (map[string]bool, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid), "fd")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, e := range ents {
		l, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		if in, ok := strings.CutPrefix(l, "socket:["); ok {
			out[strings.TrimSuffix(in, "]")] = true
		}
	}
	return out, nil
}

// listenInodes lists the inodes of the sockets bound to port (listening,
// for TCP) in /proc/net.
func listenInodes(nw string, port int) ([]string, error) {
	var out []string
	found := false
	for _, f := range []string{nw, nw + "6"} {
		fh, err := os.Open(filepath.Join("/proc/net", f))
		if err != nil {
			continue
		}
		found = true
		sc := bufio.NewScanner(fh)
		sc.Scan() // header
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 10 {
				continue
			}
			_, hexPort, ok := strings.Cut(fs[1], ":")
			p, err := strconv.ParseUint(hexPort, 16, 16)
			if !ok || err != nil || int(p) != port {
				continue
			}
			if nw == "tcp" && fs[3] != "0A" { // LISTEN
				continue
			}
			out = append(out, fs[9])
		}
		fh.Close()
	}
	if !found {
		return nil, errors.New("no /proc/net")
	}
	return out, nil
}
