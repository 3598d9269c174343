// Command barelist is a bare memberlist process: the yardstick the mesh's
// benchmarks and scale tests measure a harn node against (idle CPU and
// memory, bytes on the wire). It runs memberlist with the gossip settings
// a harn node uses (the LAN or local profile, a 32-byte gossip key) and
// nothing else: no delegate state, no user messages. It is test support,
// built by the benchmarks; it never ships.
//
//	barelist -name b1 -bind 127.0.0.1 -port 7946 -join 127.0.0.1:7947 -key BASE64 -profile lan
//
// It prints "ready ADDR" once memberlist listens, and stops at SIGTERM.
package main

import (
	"encoding/base64"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/hashicorp/memberlist"
)

func main() {
	name := flag.String("name", "", "node name (required)")
	bind := flag.String("bind", "127.0.0.1", "bind address")
	port := flag.Int("port", 0, "gossip port (0: a free one)")
	join := flag.String("join", "", "comma-separated seeds, host:port")
	key := flag.String("key", "", "base64 gossip key (32 bytes); empty: plaintext")
	profile := flag.String("profile", "lan", "memberlist profile: lan or local")
	flag.Parse()
	if err := run(*name, *bind, *port, *join, *key, *profile); err != nil {
		fmt.Fprintln(os.Stderr, "barelist:", err)
		os.Exit(1)
	}
}

func run(name, bind string, port int, join, key, profile string) error {
	if name == "" {
		return fmt.Errorf("-name is required")
	}
	var mc *memberlist.Config
	switch profile {
	case "lan":
		mc = memberlist.DefaultLANConfig()
	case "local":
		mc = memberlist.DefaultLocalConfig()
	default:
		return fmt.Errorf("-profile %q: use lan or local", profile)
	}
	mc.Name, mc.BindAddr, mc.BindPort, mc.AdvertisePort = name, bind, port, port
	mc.LogOutput = io.Discard
	if key != "" {
		k, err := base64.StdEncoding.DecodeString(key)
		if err != nil || len(k) != 32 {
			return fmt.Errorf("-key: want base64 of 32 bytes")
		}
		mc.SecretKey = k
	}
	list, err := memberlist.Create(mc)
	if err != nil {
		return err
	}
	defer list.Shutdown()
	ln := list.LocalNode()
	fmt.Printf("ready %s:%d\n", ln.Addr, ln.Port)
	if join != "" {
		if _, err := list.Join(strings.Split(join, ",")); err != nil {
			return fmt.Errorf("join: %w", err)
		}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	return nil
}
