package mesh

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

// Tests over real UDP and TCP on 127.0.0.1, free ports.

func startLoopback(t *testing.T, name string, key []byte, join ...string) (*Mesh, *RecordingHandler) {
	t.Helper()
	return startLoopbackWith(t, name, key, nil, join...)
}

func startLoopbackWith(t *testing.T, name string, key []byte, adjust func(*Config), join ...string) (*Mesh, *RecordingHandler) {
	t.Helper()
	h := &RecordingHandler{}
	cfg := TestConfig()
	if adjust != nil {
		adjust(&cfg)
	}
	cfg.Name = name
	cfg.SecretKey = key
	cfg.Handler = h
	cfg.Join = join
	cfg.Logger = testLogger()
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Shutdown() })
	return m, h
}

func mustKey(t *testing.T) []byte {
	t.Helper()
	k, err := GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestLoopbackKeyedMeshCarriesDeltas(t *testing.T) {
	key := mustKey(t)
	a, _ := startLoopback(t, "a", key)
	b, hb := startLoopback(t, "b", key, a.LocalAddr())
	WaitFor(t, wait, "two alive", func() bool { return a.NumAlive() == 2 && b.NumAlive() == 2 })
	if err := a.Broadcast("s-1", 1, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, wait, "delta over loopback", func() bool {
		d, ok := hb.Latest("s-1")
		return ok && bytes.Equal(d.Data, []byte("hello")) && d.From == "a"
	})
}

func TestLoopbackWrongKeyIsRefused(t *testing.T) {
	key := mustKey(t)
	seed, _ := startLoopback(t, "seed", key)
	plainSeed, _ := startLoopback(t, "plain-seed", nil)

	cases := []struct {
		name string
		key  []byte
		to   *Mesh
	}{
		{"other key", mustKey(t), seed},
		{"no key", nil, seed},
		{"key against plaintext", key, plainSeed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := startLoopback(t, "intruder", tc.key)
			n, err := m.Join([]string{tc.to.LocalAddr()})
			if n != 0 || !errors.Is(err, ErrKeyMismatch) {
				t.Fatalf("Join = %d, %v; want 0 and ErrKeyMismatch", n, err)
			}
			t.Log(err)
			if !strings.Contains(err.Error(), "gossip keys differ") {
				t.Fatalf("error does not say the keys differ: %v", err)
			}
			// Join is synchronous and merged nothing: the intruder knows
			// no member to gossip to, and the seed decrypts nothing it
			// sends, so there is no later arrival to wait for.
			if got := tc.to.NumAlive(); got != 1 {
				t.Fatalf("seed sees %d alive, want only itself", got)
			}
			if got := m.NumAlive(); got != 1 {
				t.Fatalf("intruder sees %d alive", got)
			}
		})
	}
}

func TestLoopbackAddressChangeRejoinsUnderSameName(t *testing.T) {
	// A long push/pull period keeps memberlist from forgetting the dead "a"
	// (it does after GossipToTheDeadTime, which mesh ties to the push/pull
	// period): the new address must win through DeadNodeReclaimTime.
	slow := func(c *Config) { c.PushPullInterval = 20 * time.Second }
	b, _ := startLoopbackWith(t, "b", nil, slow)
	c, _ := startLoopbackWith(t, "c", nil, slow, b.LocalAddr())
	a1, _ := startLoopbackWith(t, "a", nil, slow, b.LocalAddr())
	WaitFor(t, wait, "three alive", func() bool {
		return a1.NumAlive() == 3 && b.NumAlive() == 3 && c.NumAlive() == 3
	})
	oldAddr := a1.LocalAddr()
	if err := a1.Shutdown(); err != nil {
		t.Fatal(err)
	}

	// The same name on a new port (a machine whose address changed), with
	// no Leave: the old "a" is still alive, then suspect, then dead in the
	// others' eyes; DeadNodeReclaimTime lets the new address take the name.
	start := time.Now()
	a2, _ := startLoopbackWith(t, "a", nil, slow, b.LocalAddr())
	if a2.LocalAddr() == oldAddr {
		t.Fatalf("the new process got the old address %s", oldAddr)
	}
	for _, m := range []*Mesh{b, c} {
		WaitFor(t, wait, m.LocalName()+" sees a alive at its new address", func() bool {
			for _, mb := range m.Members() {
				if mb.Name == "a" {
					return mb.Status == StatusAlive && mb.Address() == a2.LocalAddr()
				}
			}
			return false
		})
	}
	t.Logf("rejoined at the new address within %v", time.Since(start).Round(time.Millisecond))
}
