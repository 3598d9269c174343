package meshtrust

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/raftstore"
	"github.com/harn-dev/harn/util/clock"
)

// The registry side of mesh trust: join tokens, issued certificates, the
// revocation list and the CAs live in the registry's key-value space, so
// that every server redeems the same tokens and every node refuses the
// same certificates.

// recordingSigner signs with the server's CA and records every certificate
// it issues in the registry before handing it out, so that `harn mesh
// remove` can revoke it. A certificate that cannot be recorded is not
// issued.
type recordingSigner struct{ t *Trust }

var _ trust.Signer = (*recordingSigner)(nil)

func (s *recordingSigner) Roots() *trust.Roots    { return s.t.Authority().Roots() }
func (s *recordingSigner) CAPEM() ([]byte, error) { return s.t.Authority().CAPEM() }
func (s *recordingSigner) Sign(csr *x509.CertificateRequest, name string, role trust.Role, ttl time.Duration) (*x509.Certificate, error) {
	cert, err := s.t.Authority().Sign(csr, name, role, ttl)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.t.recordIssued(ctx, cert); err != nil {
		return nil, fmt.Errorf("%w: record the certificate: %w", trust.ErrJoinRefused, err)
	}
	return cert, nil
}

// recordIssued records a certificate in the registry (a housekeeping write:
// servers only).
func (t *Trust) recordIssued(ctx context.Context, cert *x509.Certificate) error {
	id, err := trust.CertIdentity(cert)
	if err != nil {
		return err
	}
	b, _ := json.Marshal(issuedRecord{Name: id.Name, Role: string(id.Role), NotAfter: cert.NotAfter.UTC()})
	_, err = t.host.Apply(ctx, raftstore.KVCommand(raftstore.KVOp{Key: KVIssuedPrefix + id.Serial, Value: b}))
	return err
}

// registryTokens is the join token store in the registry. Tokens made
// while no node ran wait in the pending file until a server imports them;
// until then that server redeems them from the file.
type registryTokens struct{ t *Trust }

var _ trust.TokenStore = (*registryTokens)(nil)

func (s *registryTokens) Create(rec trust.TokenRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.t.cfg.RegistryTimeout)
	defer cancel()
	h := s.t.host
	_, err = h.Apply(ctx, raftstore.KVCommand(raftstore.KVOp{Key: KVTokenPrefix + rec.ID, Value: b, IfAbsent: true}))
	if errors.Is(err, raftstore.ErrKVConflict) {
		// A retry after an unknown outcome finds its own first write.
		if e, ok := h.KVGet(KVTokenPrefix + rec.ID); ok && string(e.Value) == string(b) {
			return nil
		}
	}
	return err
}

// Redeem checks the token and counts one use in one conditional write.
// This server's redemptions take turns, each waiting until its write is in
// the local replica, so that a fleet joining at once with one token makes
// no conflicting writes; a concurrent redeem at another server makes it
// read again.
func (s *registryTokens) Redeem(id, secret string, now time.Time) (trust.Role, error) {
	t := s.t
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.RegistryTimeout)
	defer cancel()
	t.redeemMu.Lock()
	defer t.redeemMu.Unlock()
	for attempt := 0; ; attempt++ {
		e, ok := t.host.KVGet(KVTokenPrefix + id)
		if !ok {
			if p := t.pending; p != nil {
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
		idx, err := t.host.Apply(ctx, raftstore.KVCommand(raftstore.KVOp{Key: e.Key, Value: b, IfIndex: e.Index}))
		if err == nil {
			if werr := t.host.WaitForApplied(ctx, idx); werr != nil {
				t.log.Warn("join token use counted; the local replica lags", "token", id, "err", werr)
			}
			return rec.Role, nil
		}
		if errors.Is(err, raftstore.ErrKVConflict) {
			t.conflicts.Add(1)
		}
		if !errors.Is(err, raftstore.ErrKVConflict) || attempt >= 20 {
			return "", fmt.Errorf("%w: count the token's use: %w", trust.ErrJoinRefused, err)
		}
		if !clock.Sleep(t.clock, 20*time.Millisecond, t.stop) {
			return "", ErrClosed
		}
	}
}

func (s *registryTokens) Revoke(id string) error {
	if _, ok := s.t.host.KVGet(KVTokenPrefix + id); !ok {
		return fmt.Errorf("%w (token %s)", trust.ErrTokenUnknown, id)
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.t.cfg.RegistryTimeout)
	defer cancel()
	_, err := s.t.host.Apply(ctx, raftstore.KVCommand(raftstore.KVOp{Key: KVTokenPrefix + id, Delete: true}))
	return err
}

func (s *registryTokens) List() ([]trust.TokenRecord, error) {
	var out []trust.TokenRecord
	for _, e := range s.t.host.KVList(KVTokenPrefix) {
		var rec trust.TokenRecord
		if json.Unmarshal(e.Value, &rec) == nil {
			out = append(out, rec)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Created.Before(out[j].Created) })
	return out, nil
}

// Sync keeps this node in step with the registry's trust records: the
// revocation list and the trusted CAs; and, on servers, moves pending
// tokens into the registry and records its own certificate.
func (t *Trust) Sync() {
	var serials []string
	for _, e := range t.host.KVList(KVRevokedPrefix) {
		serials = append(serials, e.Key[len(KVRevokedPrefix):])
	}
	t.revs.Replace(serials)
	removed := t.RemovedNames()
	t.mu.Lock()
	t.removed = removed
	t.mu.Unlock()
	t.syncRoots()
	t.renewSoon()
	id, err := t.holder.Identity()
	if err != nil {
		return
	}
	t.mu.Lock()
	if t.revs.IsRevoked(id.Serial) && !t.ownRevoked {
		t.ownRevoked = true
		t.log.Error("this node's certificate is revoked: it was removed from the mesh; rejoin with a new token", "identity", id.String())
	}
	recorded := t.ownRecorded == id.Serial
	t.mu.Unlock()
	if t.Authority() == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.cfg.ForwardTimeout)
	defer cancel()
	if !t.host.LeaderKnown() {
		return
	}
	if !recorded {
		if _, ok := t.host.KVGet(KVIssuedPrefix + id.Serial); ok {
			recorded = true
		} else if err := t.recordIssued(ctx, t.holder.Leaf()); err == nil {
			recorded = true
		}
		if recorded {
			t.mu.Lock()
			t.ownRecorded = id.Serial
			t.mu.Unlock()
		}
	}
	t.importPending(ctx)
}

// importPending moves tokens made while no node ran into the registry.
func (t *Trust) importPending(ctx context.Context) {
	p := t.pending
	recs, err := p.List()
	if err != nil || len(recs) == 0 {
		return
	}
	for _, rec := range recs {
		b, _ := json.Marshal(rec)
		_, err := t.host.Apply(ctx, raftstore.KVCommand(raftstore.KVOp{Key: KVTokenPrefix + rec.ID, Value: b, IfAbsent: true}))
		if err != nil && !errors.Is(err, raftstore.ErrKVConflict) {
			return
		}
		_ = p.Revoke(rec.ID)
		t.log.Info("join token moved into the registry", "token", rec.ID)
	}
}

// RemovedNames are the nodes `harn mesh remove` took out: a revoked
// certificate names them and no certificate issued to them is still
// valid. The leader does not add them back to the raft configuration,
// and no node pulls their presence.
func (t *Trust) RemovedNames() map[string]bool {
	var out map[string]bool
	for _, e := range t.host.KVList(KVRevokedPrefix) {
		var rec revokedRecord
		if json.Unmarshal(e.Value, &rec) == nil && rec.Name != "" {
			if out == nil {
				out = map[string]bool{}
			}
			out[rec.Name] = true
		}
	}
	if out == nil {
		return nil
	}
	for _, e := range t.host.KVList(KVIssuedPrefix) {
		var rec issuedRecord
		if json.Unmarshal(e.Value, &rec) == nil {
			delete(out, rec.Name) // rejoined with a new token
		}
	}
	return out
}

// Pending reports whether the trust room has work left that no change
// of the registry will bring back to it: a node's renewal onto a new CA,
// or a server's record of its own certificate. The cluster follows the
// registry every TrustSync while it has, and only at changes otherwise.
func (t *Trust) Pending() bool {
	leaf := t.holder.Leaf()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.Authority() != nil {
		return leaf != nil && t.ownRecorded != trust.SerialString(leaf)
	}
	return t.renewDue || t.renewing
}

// RedeemConflicts counts the token writes that found the token changed
// since it was read (a redeem at another server): tests, benchmarks.
func (t *Trust) RedeemConflicts() int64 { return t.conflicts.Load() }

// IsRemoved reports whether name was removed from the mesh (its
// certificates revoked), as of the last Sync.
func (t *Trust) IsRemoved(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.removed[name]
}
