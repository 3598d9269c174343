package mesh

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
)

func validConfig() Config {
	c := TestConfig()
	c.Handler = &RecordingHandler{}
	return c
}

func TestConfigValidate(t *testing.T) {
	if err := validConfig().Validate(); err != nil {
		t.Fatalf("TestConfig: %v", err)
	}
	d := DefaultConfig()
	d.Handler = &RecordingHandler{}
	if err := d.Validate(); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	bad := map[string]func(c *Config){
		"Name":           func(c *Config) { c.Name = "" },
		"BindPort":       func(c *Config) { c.BindPort = 70000 },
		"BindAddr":       func(c *Config) { c.BindAddr = "example.com" },
		"SecretKey":      func(c *Config) { c.SecretKey = make([]byte, 31) },
		"Profile":        func(c *Config) { c.Profile = "wan" },
		"RetransmitMult": func(c *Config) { c.RetransmitMult = -1 },
		"DirectSendWorkers": func(c *Config) {
			c.DirectSendWorkers = 0
		},
		"durations":      func(c *Config) { c.ProbeInterval = -time.Second },
		"JoinBackoffMin": func(c *Config) { c.JoinBackoffMin = 0 },
		"Handler":        func(c *Config) { c.Handler = nil },
		"Role":           func(c *Config) { c.Meta.Role = "voter" },
		"Meta":           func(c *Config) { c.Meta.Version = strings.Repeat("v", 600) },
	}
	for field, mutate := range bad {
		c := validConfig()
		mutate(&c)
		err := c.Validate()
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), field) {
			t.Errorf("%s: err = %v, want ErrConfig naming %s", field, err, field)
		}
		if _, err := New(c); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: New accepted it", field)
		}
	}
}

func TestMemberlistConfigTakesFieldsOverProfile(t *testing.T) {
	c := validConfig()
	c.SecretKey = make([]byte, 32)
	mc := c.memberlistConfig()
	if mc.ProbeInterval != c.ProbeInterval || mc.GossipInterval != c.GossipInterval ||
		mc.PushPullInterval != c.PushPullInterval || mc.DeadNodeReclaimTime != c.DeadNodeReclaimTime ||
		mc.TCPTimeout != c.TCPTimeout || mc.SuspicionMult != c.SuspicionMult || len(mc.SecretKey) != 32 {
		t.Fatalf("memberlist config does not carry the fields: %+v", mc)
	}
	c.ProbeInterval = 0
	if got := c.memberlistConfig().ProbeInterval; got != memberlist.DefaultLocalConfig().ProbeInterval {
		t.Fatalf("zero field should take the profile's value, got %v", got)
	}
}

func TestKeys(t *testing.T) {
	k, err := GenerateKey()
	if err != nil || len(k) != 32 {
		t.Fatalf("GenerateKey = %d bytes, %v", len(k), err)
	}
	got, err := DecodeKey(EncodeKey(k) + "\n")
	if err != nil || !bytes.Equal(got, k) {
		t.Fatalf("round trip: %v", err)
	}
	for _, s := range []string{"not base64!", EncodeKey(make([]byte, 16))} {
		_, err := DecodeKey(s)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), "openssl rand -base64 32") {
			t.Errorf("DecodeKey(%q) = %v, want ErrConfig naming the fix", s, err)
		}
	}
}

func TestWireRoundTrips(t *testing.T) {
	f := encodeDelta("node-1", "s-42", 1<<40, []byte("payload"))
	d, err := decodeDelta(f)
	if err != nil || d.origin != "node-1" || d.key != "s-42" || d.version != 1<<40 || string(d.data) != "payload" {
		t.Fatalf("delta: %+v %v", d, err)
	}
	li, err := decodeLeave(encodeLeave(leaveIntent{name: "n", instance: 99}))
	if err != nil || li.name != "n" || li.instance != 99 {
		t.Fatalf("leave: %+v %v", li, err)
	}
	s := pushState{origin: "o", blob: []byte("blob"), intents: []leaveIntent{{"a", 1}, {"b", 2}}}
	got, err := decodeState(encodeState(s))
	if err != nil || got.origin != "o" || string(got.blob) != "blob" || fmt.Sprint(got.intents) != fmt.Sprint(s.intents) {
		t.Fatalf("state: %+v %v", got, err)
	}
	nm := NodeMeta{Role: RoleServer, RaftAddr: "r:1", RPCAddr: "p:2", HTTPAddr: "h:3", Version: "v"}
	gm, inst, err := decodeMeta(nm.encode(7))
	if err != nil || gm != nm || inst != 7 {
		t.Fatalf("meta: %+v %d %v", gm, inst, err)
	}
	// Truncations never panic and are reported.
	for _, b := range [][]byte{f, encodeLeave(li), encodeState(s), nm.encode(7)} {
		for i := 1; i < len(b)-1; i++ {
			_, _ = decodeDelta(b[:i])
			_, _ = decodeLeave(b[:i])
			_, _ = decodeState(b[:i])
			_, _, _ = decodeMeta(b[:i])
		}
	}
	if _, err := decodeDelta(f[:3]); err == nil {
		t.Fatal("truncated delta accepted")
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(encodeDelta("a", "k", 3, []byte("d")))
	f.Add(encodeState(pushState{origin: "o", blob: []byte("x"), intents: []leaveIntent{{"a", 1}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = decodeDelta(b)
		_, _ = decodeLeave(b)
		_, _ = decodeState(b)
		_, _, _ = decodeMeta(b)
	})
}

func TestScaledRetransmitMult(t *testing.T) {
	// transmissions per node, L = mult·⌈log10(n+1)⌉, must satisfy
	// n·e^−L ≤ 1e-3 and mult ≥ memberlist's default 4.
	want := map[int]int{1: 7, 5: 9, 9: 10, 20: 5, 50: 6, 100: 4, 1000: 4}
	for n, mult := range want {
		if got := scaledRetransmitMult(n); got != mult {
			t.Errorf("n=%d: mult %d, want %d", n, got, mult)
		}
	}
	for n := 1; n <= 5000; n++ {
		mult := scaledRetransmitMult(n)
		scale := 1
		for p := 10; p <= n; p *= 10 {
			scale++
		}
		if mult < 4 || float64(n)*math.Exp(-float64(mult*scale)) > missTarget {
			t.Fatalf("n=%d: mult %d (L=%d) misses the target", n, mult, mult*scale)
		}
	}
}

func TestPeersFileIsAtomicAndReadable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "peers.json")
	peers := []peerEntry{{Name: "b", Addr: "10.0.0.2:7947"}, {Name: "a", Addr: "10.0.0.1:7947"}}
	if err := savePeers(path, peers, time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	got, err := loadPeers(path)
	if err != nil || len(got) != 2 || got[0].Name != "a" {
		t.Fatalf("loadPeers = %+v, %v", got, err)
	}
	if got, err := loadPeers(path + ".missing"); err != nil || got != nil {
		t.Fatalf("missing file: %v %v", got, err)
	}
}

func TestClassifyJoinErr(t *testing.T) {
	if err := classifyJoinErr(errors.New("failed to join x: dial tcp: connection refused")); !errors.Is(err, ErrJoin) || errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("refused: %v", err)
	}
	if err := classifyJoinErr(errors.New("remote error: No installed keys could decrypt the message")); !errors.Is(err, ErrKeyMismatch) {
		t.Fatalf("key: %v", err)
	}
}

func TestQueuePrune(t *testing.T) {
	bq := newBroadcastQueue(0, func() int { return 3 })
	bq.prune(2) // empty, never used: must not panic
	for i := 0; i < 5; i++ {
		bq.queue(&broadcast{kind: msgDelta, key: fmt.Sprint(i), version: 1, msg: []byte{byte(i)}})
	}
	bq.prune(2)
	if n := bq.numQueued(); n != 2 {
		t.Fatalf("%d queued after prune, want 2", n)
	}
}
