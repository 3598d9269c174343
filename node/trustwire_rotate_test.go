package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/meshtrust"
	"github.com/harn-dev/harn/presence"
)

// keyringOp runs `harn keyring OP KEY` on n. As an operator does, it
// retries while the registry has no leader (an election under load), a
// bounded number of times: the rotation's rules are under test, not the
// leader's stability on a loaded machine.
func keyringOp(t *testing.T, n *Node, op, key string) {
	t.Helper()
	b, _ := json.Marshal(wire.KeyringChange{Op: op, Key: key})
	var err error
	for try := 0; try < 20; try++ {
		if _, err = n.trust.MeshAdmin(context.Background(), wire.AdminKeyringOp, b); !errors.Is(err, ErrNoLeader) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("keyring %s: %v", op, err)
	}
}

func nodeKeys(n *Node) (string, map[string]bool) {
	p, all, err := n.cl.Parts().Mesh.Keys()
	if err != nil {
		return "", nil
	}
	m := map[string]bool{}
	for _, k := range all {
		m[meshtrust.DisplayKey(k)] = true
	}
	return meshtrust.DisplayKey(p), m
}

func TestGossipKeyRotationUnderTrafficLosesNoPresenceUpdate(t *testing.T) {
	// LAN gossip timers: the local profile's probe timeouts suspect
	// members on a loaded machine under -race, rotation or not.
	m, _ := startTrustMeshWith(t, func(c *Config) { c.Cluster.MeshProfile = mesh.ProfileLAN })
	m.join("tw1", m.token(true, 0, 0), true)
	m.join("tw2", m.token(false, 0, 0), false)
	waitFor(t, 20*time.Second, "three alive members everywhere", func() bool {
		for _, n := range m.nodes {
			alive := 0
			for _, mb := range n.cl.Parts().Mesh.Members() {
				if mb.Status == mesh.StatusAlive {
					alive++
				}
			}
			if alive != 3 {
				return false
			}
		}
		return true
	})
	oldKey, _ := nodeKeys(m.nodes[0])
	waitFor(t, 10*time.Second, "the keyring in the registry", func() bool {
		_, ok := m.nodes[2].cl.Registry().KVGet(meshtrust.KVKeyring)
		return ok
	})

	// Continuous hook traffic on every node while the key rotates.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	var downs []string
	for i, n := range m.nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sid := fmt.Sprintf("rot-%d", i)
			if _, err := n.Ingest([]presence.Event{{SessionID: sid, Type: presence.TypeSessionStart, TS: time.Now(), Agent: "claude-code"}}); err != nil {
				t.Error(err)
				return
			}
			for k := 0; ; k++ {
				typ := presence.TypeInputRequested
				if k%2 == 1 {
					typ = presence.TypeInputResolved
				}
				if _, err := n.Ingest([]presence.Event{{SessionID: sid, Type: typ, TS: time.Now(), Agent: "claude-code"}}); err != nil {
					t.Error(err)
					return
				}
				for _, mb := range n.cl.Parts().Mesh.Members() {
					if mb.Status != mesh.StatusAlive {
						mu.Lock()
						downs = append(downs, fmt.Sprintf("%s saw %s %s", n.Name(), mb.Name, mb.Status))
						mu.Unlock()
					}
				}
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
			}
		}()
	}

	newKey, err := GenerateGossipKey()
	if err != nil {
		t.Fatal(err)
	}
	keyringOp(t, m.nodes[0], "install", newKey)
	waitFor(t, 10*time.Second, "the new key installed everywhere", func() bool {
		for _, n := range m.nodes {
			if _, all := nodeKeys(n); !all[newKey] {
				return false
			}
		}
		return true
	})
	keyringOp(t, m.nodes[1], "use", newKey)
	waitFor(t, 10*time.Second, "the new key in use everywhere", func() bool {
		for _, n := range m.nodes {
			if p, _ := nodeKeys(n); p != newKey {
				return false
			}
		}
		return true
	})
	keyringOp(t, m.nodes[0], "remove", oldKey)
	waitFor(t, 10*time.Second, "the old key gone everywhere", func() bool {
		for _, n := range m.nodes {
			if _, all := nodeKeys(n); all[oldKey] || len(all) != 1 {
				return false
			}
		}
		return true
	})
	// Some traffic on the new key alone, then stop.
	for i, n := range m.nodes {
		sid, from := fmt.Sprintf("rot-%d", i), sentVersion(n, fmt.Sprintf("rot-%d", i))
		waitFor(t, 10*time.Second, "traffic on the new key", func() bool { return sentVersion(n, sid) >= from+5 })
	}
	close(stop)
	wg.Wait()

	for i, origin := range m.nodes {
		sid := fmt.Sprintf("rot-%d", i)
		want := sentVersion(origin, sid)
		for _, n := range m.nodes {
			if n == origin {
				continue
			}
			waitFor(t, 10*time.Second, fmt.Sprintf("%s's last update of %s on %s", origin.Name(), sid, n.Name()), func() bool {
				return remoteVersion(n, origin.Name(), sid) == want
			})
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(downs) > 0 {
		t.Fatalf("members went down during the rotation: %v", downs[:min(len(downs), 5)])
	}
}
