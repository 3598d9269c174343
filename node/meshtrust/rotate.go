package meshtrust

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/raftstore"
)

// CA rotation through the registry. The server that rotates publishes the
// trusted CAs (trust/roots, every node follows them) and the new CA's key
// (trust/ca) sealed with AES-256-GCM under a key derived from the previous
// CA's private key: every node replicates the registry, but only servers,
// which hold the previous CA key, can open it.

// CAStatus is wire.CAStatus.
type CAStatus = wire.CAStatus

// sealedCA is the new CA for the other servers.
type sealedCA struct {
	For   string `json:"for"` // fingerprint of the CA whose key opens it
	Nonce []byte `json:"nonce"`
	Box   []byte `json:"box"`
}

func sealKey(ca *trust.CA) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(ca.Key)
	if err != nil {
		return nil, err
	}
	k := sha256.Sum256(append([]byte("harn ca handover v1\x00"), der...))
	return k[:], nil
}

func gcmOf(key []byte) (cipher.AEAD, error) {
	b, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(b)
}

func sealCA(prev *trust.CA, pem []byte) ([]byte, error) {
	key, err := sealKey(prev)
	if err != nil {
		return nil, err
	}
	g, err := gcmOf(key)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, g.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	fp := prev.Fingerprint().String()
	return json.Marshal(sealedCA{For: fp, Nonce: nonce, Box: g.Seal(nil, nonce, pem, []byte(fp))})
}

// openCA opens a sealed CA with ca's key; ok false when it is sealed for
// another CA.
func openCA(ca *trust.CA, b []byte) (pem []byte, ok bool, err error) {
	var s sealedCA
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, false, err
	}
	if s.For != ca.Fingerprint().String() {
		return nil, false, nil
	}
	key, err := sealKey(ca)
	if err != nil {
		return nil, false, err
	}
	g, err := gcmOf(key)
	if err != nil {
		return nil, false, err
	}
	if len(s.Nonce) != g.NonceSize() {
		return nil, false, errors.New("node: sealed CA: bad nonce")
	}
	pem, err = g.Open(nil, s.Nonce, s.Box, []byte(s.For))
	return pem, err == nil, err
}

// RotateCA starts (finish false) or ends a CA rotation on this server and
// publishes it through the registry.
func (t *Trust) RotateCA(ctx context.Context, finish bool) (CAStatus, error) {
	a := t.Authority()
	if a == nil {
		return CAStatus{}, ErrNotServer
	}
	var ops []raftstore.KVOp
	if finish {
		if err := a.FinishRotation(); err != nil {
			return CAStatus{}, fmt.Errorf("%w: %w", layout.ErrConfig, err)
		}
	} else {
		prev := a.CA()
		if err := a.Rotate(); err != nil {
			return CAStatus{}, fmt.Errorf("%w: %w", layout.ErrConfig, err)
		}
		pem, err := a.CAPEM()
		if err != nil {
			return CAStatus{}, err
		}
		box, err := sealCA(prev, pem)
		if err != nil {
			return CAStatus{}, err
		}
		ops = append(ops, raftstore.KVOp{Key: KVCA, Value: box})
	}
	roots := a.Roots()
	ops = append(ops, raftstore.KVOp{Key: KVRoots, Value: roots.PEM()})
	t.holder.SetRoots(roots)
	if _, err := t.host.Apply(ctx, raftstore.KVCommand(ops...)); err != nil {
		return CAStatus{}, err
	}
	t.log.Info("mesh CA rotation", "finish", finish, "current", a.Fingerprint().String())
	t.syncRoots()
	return t.CAStatus(), nil
}

// syncRoots follows the registry's trusted CAs: every node trusts them;
// servers install a new CA handed over through the registry. A change
// makes a node's renewer check at once (it moves onto the new CA).
func (t *Trust) syncRoots() {
	e, ok := t.host.KVGet(KVRoots)
	if !ok {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.Index == t.rootsIdx {
		return
	}
	roots, err := trust.ParseRoots(e.Value)
	if err != nil {
		t.log.Error("registry CA roots ignored", "err", err)
		t.rootsIdx = e.Index
		return
	}
	if a := t.Authority(); a != nil {
		if ce, ok := t.host.KVGet(KVCA); ok && ce.Index != t.caIdx {
			pem, mine, err := openCA(a.CA(), ce.Value)
			switch {
			case err != nil:
				t.log.Error("cannot open the new CA from the registry", "err", err)
			case mine:
				ca, err := trust.ParseCAPEM(pem)
				if err == nil && !ca.Fingerprint().Equal(a.Fingerprint()) {
					err = trust.InstallCA(t.dir, ca, roots)
				}
				if err != nil {
					t.log.Error("install the new CA", "err", err)
					return
				}
			}
			t.caIdx = ce.Index
		}
		if err := trust.SaveRoots(t.dir, roots); err != nil {
			t.log.Error("save the CA roots", "err", err)
			return
		}
		na, err := trust.LoadAuthority(t.dir, t.clock)
		if err != nil {
			t.log.Error("reload the CA", "err", err)
			return
		}
		t.auth.Store(na)
		roots = na.Roots()
	} else if err := trust.SaveRoots(t.dir, roots); err != nil {
		t.log.Error("save the CA roots", "err", err)
		return
	}
	t.holder.SetRoots(roots)
	t.rootsIdx = e.Index
	t.renewDue = true
	t.log.Info("trusted CAs updated", "roots", len(roots.Certs()))
	// Nodes move onto the new CA at once. Servers wait for their renewer's
	// next check (within a minute), so that every node has learnt the new
	// CA before a server presents a certificate from it.
	// The trust loop's renewSoon, right after this, moves a node onto
	// the new CA (not here: t.mu is held).
}

// renewSoon, on a node (not a server), renews now when the certificate is
// due, at most one renewal at a time and one a second: after a CA
// rotation the node keeps asking until a server that holds the new CA
// answers.
func (t *Trust) renewSoon() {
	if t.renewer == nil || t.Authority() != nil {
		return
	}
	t.mu.Lock()
	due := t.renewDue
	t.mu.Unlock()
	if !due {
		return // no new CA since the certificate was last found current
	}
	if !t.renewer.Due() {
		t.mu.Lock()
		t.renewDue = false
		t.mu.Unlock()
		return
	}
	now := t.clock.Now()
	t.mu.Lock()
	if t.renewing || now.Sub(t.lastRenew) < time.Second {
		t.mu.Unlock()
		return
	}
	t.renewing, t.lastRenew = true, now
	t.mu.Unlock()
	t.goLoop(func() {
		defer func() {
			t.mu.Lock()
			t.renewing = false
			t.mu.Unlock()
		}()
		ctx, cancel := t.stopContext()
		defer cancel()
		if _, err := t.renewer.Check(ctx); err != nil {
			t.log.Warn("renew onto the new CA", "err", err)
		}
	})
}

// CAStatus is the CAs this node trusts, and whether its certificate is
// from the current one.
func (t *Trust) CAStatus() CAStatus {
	var st CAStatus
	roots := t.holder.Roots()
	for _, fp := range roots.Fingerprints() {
		st.Roots = append(st.Roots, fp.String())
	}
	st.Rotating = len(st.Roots) > 1
	if leaf, cur := t.holder.Leaf(), roots.Certs(); leaf != nil && len(cur) > 0 {
		st.OnCurrent = leaf.CheckSignatureFrom(cur[0]) == nil
	}
	return st
}
