package meshtrust

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/harn-dev/harn/node/trust"
)

// FuzzDecodeKeyring: a keyring comes from a server's join answer and from
// the registry; decoding never panics and accepts only well-formed rings.
func FuzzDecodeKeyring(f *testing.F) {
	k := make([]byte, 32)
	good, _ := json.Marshal(Keyring{Primary: k, Keys: [][]byte{k}})
	f.Add(good)
	f.Add([]byte(`{"primary":"","keys":[]}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeKeyring(b)
		if err != nil {
			return
		}
		if r.validate() != nil {
			t.Fatal("decoded an invalid keyring")
		}
	})
}

// FuzzOpenSealedCA: the sealed CA comes from the registry; opening never
// panics and never accepts what was not sealed with the CA's key.
func FuzzOpenSealedCA(f *testing.F) {
	ca, err := trust.NewCA(time.Now(), time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	box, err := sealCA(ca, []byte("payload"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(box)
	f.Add([]byte(`{"for":"x"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		pem, ok, err := openCA(ca, b)
		if ok && err == nil && string(pem) != "payload" {
			t.Fatalf("opened a forged box: %q", pem)
		}
	})
}

func TestSealedCAOpensOnlyWithThePreviousCAKey(t *testing.T) {
	prev, _ := trust.NewCA(time.Now(), time.Hour)
	other, _ := trust.NewCA(time.Now(), time.Hour)
	box, err := sealCA(prev, []byte("new ca"))
	if err != nil {
		t.Fatal(err)
	}
	if pem, ok, err := openCA(prev, box); err != nil || !ok || string(pem) != "new ca" {
		t.Fatalf("open: %q %v %v", pem, ok, err)
	}
	if _, ok, _ := openCA(other, box); ok {
		t.Fatal("another CA opened the box")
	}
	var s sealedCA
	json.Unmarshal(box, &s)
	s.Box[0] ^= 1
	tampered, _ := json.Marshal(s)
	if _, ok, err := openCA(prev, tampered); ok || err == nil {
		t.Fatal("a tampered box opened")
	}
}
