package node

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

// The registry side of mesh trust: join tokens, issued certificates, the
// revocation list and the gossip keyring live in the registry's key-value
// space, so that every server redeems the same tokens and every node
// refuses the same certificates.

// recordingSigner signs with the server's CA and records every certificate
// it issues in the registry before handing it out, so that `harn mesh
// remove` can revoke it. A certificate that cannot be recorded is not
// issued.
type recordingSigner struct{ c *cluster }

var _ trust.Signer = (*recordingSigner)(nil)

func (s *recordingSigner) Roots() *trust.Roots    { return s.c.trust.authority().Roots() }
func (s *recordingSigner) CAPEM() ([]byte, error) { return s.c.trust.authority().CAPEM() }
func (s *recordingSigner) Sign(csr *x509.CertificateRequest, name string, role trust.Role, ttl time.Duration) (*x509.Certificate, error) {
	cert, err := s.c.trust.authority().Sign(csr, name, role, ttl)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.c.recordIssued(ctx, cert); err != nil {
		return nil, fmt.Errorf("%w: record the certificate: %w", trust.ErrJoinRefused, err)
	}
	return cert, nil
}

// recordIssued records a certificate in the registry (a housekeeping write:
// servers only).
func (c *cluster) recordIssued(ctx context.Context, cert *x509.Certificate) error {
	id, err := trust.CertIdentity(cert)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(issuedRecord{Name: id.Name, Role: string(id.Role), NotAfter: cert.NotAfter.UTC()})
	_, err = c.applyCommand(ctx, raftstore.KVCommand(raftstore.KVOp{Key: kvIssuedPrefix + id.Serial, Value: b}))
	return err
}

// registryTokens is the join token store in the registry. Tokens made
// while no node ran wait in the pending file until a server imports them;
// until then that server redeems them from the file.
type registryTokens struct{ c *cluster }

var _ trust.TokenStore = (*registryTokens)(nil)

func (s *registryTokens) Create(rec trust.TokenRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.c.cfg.RegistrySyncTimeout)
	defer cancel()
	_, err = s.c.applyCommand(ctx, raftstore.KVCommand(raftstore.KVOp{Key: kvTokenPrefix + rec.ID, Value: b, IfAbsent: true}))
	if errors.Is(err, raftstore.ErrKVConflict) {
		// A retry after an unknown outcome finds its own first write.
		if e, ok := s.c.store.KVGet(kvTokenPrefix + rec.ID); ok && string(e.Value) == string(b) {
			return nil
		}
	}
	return err
}

// Redeem checks the token and counts one use in one conditional write: a
// concurrent redeem at another server makes it read again.
func (s *registryTokens) Redeem(id, secret string, now time.Time) (trust.Role, error) {
	c := s.c
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.RegistrySyncTimeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		e, ok := c.store.KVGet(kvTokenPrefix + id)
		if !ok {
			if p := c.trust.pending; p != nil {
				role, err := p.Redeem(id, secret, now)
				if !errors.Is(err, trust.ErrTokenUnknown) {
					return role, err
				}
			}
			return "", fmt.Errorf("%w (token %s)", trust.ErrTokenUnknown, id)
		}
		var rec trust.TokenRecord
		if err := json.Unmarshal(e.Value, &rec); err != nil {
			return "", fmt.Errorf("%w: token record: %w", trust.ErrTokenUnknown, err)
		}
		if err := rec.Check(secret, now); err != nil {
			return "", err
		}
		rec.Used++
		b, _ := json.Marshal(rec)
		_, err := c.applyCommand(ctx, raftstore.KVCommand(raftstore.KVOp{Key: e.Key, Value: b, IfIndex: e.Index}))
		if err == nil {
			return rec.Role, nil
		}
		if !errors.Is(err, raftstore.ErrKVConflict) || attempt >= 20 {
			return "", fmt.Errorf("%w: count the token's use: %w", trust.ErrJoinRefused, err)
		}
		if !clock.Sleep(c.clock, 20*time.Millisecond, c.stop) {
			return "", ErrClosed
		}
	}
}

func (s *registryTokens) Revoke(id string) error {
	if _, ok := s.c.store.KVGet(kvTokenPrefix + id); !ok {
		return fmt.Errorf("%w (token %s)", trust.ErrTokenUnknown, id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.c.cfg.RegistrySyncTimeout)
	defer cancel()
	_, err := s.c.applyCommand(ctx, raftstore.KVCommand(raftstore.KVOp{Key: kvTokenPrefix + id, Delete: true}))
	return err
}

func (s *registryTokens) List() ([]trust.TokenRecord, error) {
	var out []trust.TokenRecord
	for _, e := range s.c.store.KVList(kvTokenPrefix) {
		var rec trust.TokenRecord
		if json.Unmarshal(e.Value, &rec) == nil {
			out = append(out, rec)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}

// trustLoop keeps this node in step with the registry's trust records:
// the revocation list, the gossip keyring, the trusted CAs; and, on
// servers, moves pending tokens into the registry and records its own
// certificate.
func (c *cluster) trustLoop() {
	t := c.clock.NewTicker(c.cfg.TrustSync)
	defer t.Stop()
	for {
		c.syncSessionQuota()
		c.syncTrust()
		select {
		case <-c.stop:
			return
		case <-t.C():
		}
	}
}

func (c *cluster) syncTrust() {
	c.syncOverrides()
	c.syncKeyring()
	tr := c.trust
	if tr == nil {
		return
	}
	var serials []string
	for _, e := range c.store.KVList(kvRevokedPrefix) {
		serials = append(serials, e.Key[len(kvRevokedPrefix):])
	}
	tr.revs.Replace(serials)
	removed := c.removedNames()
	tr.mu.Lock()
	tr.removed = removed
	tr.mu.Unlock()
	c.syncRoots()
	c.renewSoon()
	id, err := tr.holder.Identity()
	if err != nil {
		return
	}
	tr.mu.Lock()
	if tr.revs.IsRevoked(id.Serial) && !tr.ownRevoked {
		tr.ownRevoked = true
		c.log.Error("this node's certificate is revoked: it was removed from the mesh; rejoin with a new token", "identity", id.String())
	}
	recorded := tr.ownRecorded == id.Serial
	tr.mu.Unlock()
	if tr.authority() == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ForwardTimeout)
	defer cancel()
	if id, _ := c.store.Leader(); id == "" {
		return
	}
	if !recorded {
		if _, ok := c.store.KVGet(kvIssuedPrefix + id.Serial); ok {
			recorded = true
		} else if err := c.recordIssued(ctx, tr.holder.Leaf()); err == nil {
			recorded = true
		}
		if recorded {
			tr.mu.Lock()
			tr.ownRecorded = id.Serial
			tr.mu.Unlock()
		}
	}
	c.importPending(ctx)
}

// importPending moves tokens made while no node ran into the registry.
func (c *cluster) importPending(ctx context.Context) {
	p := c.trust.pending
	recs, err := p.List()
	if err != nil || len(recs) == 0 {
		return
	}
	for _, rec := range recs {
		b, _ := json.Marshal(rec)
		_, err := c.applyCommand(ctx, raftstore.KVCommand(raftstore.KVOp{Key: kvTokenPrefix + rec.ID, Value: b, IfAbsent: true}))
		if err != nil && !errors.Is(err, raftstore.ErrKVConflict) {
			return
		}
		_ = p.Revoke(rec.ID)
		c.log.Info("join token moved into the registry", "token", rec.ID)
	}
}

// syncKeyring applies the registry's gossip keyring to memberlist (and
// saves it), or, on the leader, seeds the registry with this node's.
func (c *cluster) syncKeyring() {
	if c.mesh == nil {
		return
	}
	e, ok := c.store.KVGet(kvKeyring)
	if !ok {
		if c.trust == nil || !c.store.IsLeader() {
			return
		}
		primary, all, err := c.mesh.Keys()
		if err != nil {
			return
		}
		b, _ := json.Marshal(Keyring{Primary: primary, Keys: all})
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ForwardTimeout)
		defer cancel()
		_, _ = c.applyCommand(ctx, raftstore.KVCommand(raftstore.KVOp{Key: kvKeyring, Value: b, IfAbsent: true}))
		return
	}
	c.keyringMu.Lock()
	defer c.keyringMu.Unlock()
	if e.Index == c.keyringIdx {
		return
	}
	k, err := DecodeKeyring(e.Value)
	if err != nil {
		c.log.Error("registry gossip keyring ignored", "err", err)
		c.keyringIdx = e.Index
		return
	}
	if err := applyKeyring(c.mesh, k); err != nil {
		c.log.Error("apply the gossip keyring", "err", err)
		return
	}
	c.keyringIdx = e.Index
	if c.trust != nil {
		if err := SaveKeyring(c.trust.dir, k); err != nil {
			c.log.Error("save the gossip keyring", "err", err)
		}
	}
	c.log.Info("gossip keyring applied", "keys", len(k.Keys))
}

// applyKeyring makes memberlist's keyring equal k: install, use, remove.
func applyKeyring(m *mesh.Mesh, k *Keyring) error {
	for _, x := range k.Keys {
		if err := m.InstallKey(x); err != nil {
			return err
		}
	}
	if err := m.UseKey(k.Primary); err != nil {
		return err
	}
	_, have, err := m.Keys()
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, x := range k.Keys {
		want[string(x)] = true
	}
	for _, x := range have {
		if !want[string(x)] {
			if err := m.RemoveKey(x); err != nil {
				return err
			}
		}
	}
	return nil
}

// writePrivateFile writes name in dir atomically, 0600, dir 0700.
func writePrivateFile(dir, name string, b []byte) error {
	if err := trust.EnsurePrivateDir(dir); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, name))
}

func readFileBounded(p string, max int64) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, 0, 4096)
	buf := make([]byte, 4096)
	for {
		n, err := f.Read(buf)
		b = append(b, buf[:n]...)
		if int64(len(b)) > max {
			return nil, fmt.Errorf("%s is larger than %d bytes", p, max)
		}
		if err != nil {
			break
		}
	}
	return b, nil
}

// refuse logs a refusal at this node, naming the caller's certificate, and
// returns the status the caller sees.
func (c *cluster) refuse(method string, caller trust.Identity, err error) error {
	c.log.Warn("trust: refused", "method", method, "caller", caller.String(), "err", err)
	return status.Error(codes.PermissionDenied, err.Error())
}
