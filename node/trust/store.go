package trust

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/harn-dev/harn/util/clock"
)

// Files in a trust directory (the node keeps one under its data dir). The
// directory is 0700 and every file 0600.
const (
	// FileRoots holds the trusted CA certificates, current first, then the
	// previous CA during a rotation. Every node has it.
	FileRoots = "ca.pem"
	// FileCAKey holds the current CA's certificate and private key. Only
	// servers have it.
	FileCAKey = "ca-key.pem"
	// FileNode holds this node's certificate and private key.
	FileNode = "node.pem"
)

// maxPEMFile bounds every PEM file this package reads.
const maxPEMFile = 1 << 20

// Authority is a server's mesh CA kept in a trust directory: it signs
// certificates and rotates the CA. Safe for concurrent use.
type Authority struct {
	dir string
	clk clock.Clock

	mu    sync.Mutex
	ca    *CA
	roots *Roots
}

// InitAuthority loads the CA in dir, or creates one when dir holds none
// (`harn mesh init`). created says which. The directory is created or
// tightened to 0700 and its files to 0600.
func InitAuthority(dir string, clk clock.Clock) (a *Authority, created bool, err error) {
	a, err = LoadAuthority(dir, clk)
	if !errors.Is(err, ErrNoCA) {
		return a, false, err
	}
	ca, err := NewCA(clk.Now(), DefaultCATTL)
	if err != nil {
		return nil, false, err
	}
	if err := InstallCA(dir, ca, NewRoots(ca.Cert)); err != nil {
		return nil, false, err
	}
	a, err = LoadAuthority(dir, clk)
	return a, err == nil, err
}

// LoadAuthority loads the CA in dir; ErrNoCA when there is none. The
// directory is tightened first; a key file that others can read is then
// impossible, but one owned by another user is refused.
func LoadAuthority(dir string, clk clock.Clock) (*Authority, error) {
	if _, err := os.Stat(filepath.Join(dir, FileCAKey)); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s (run harn mesh init on the first server)", ErrNoCA, dir)
	}
	if err := EnsurePrivateDir(dir); err != nil {
		return nil, err
	}
	b, err := readSecretFile(filepath.Join(dir, FileCAKey), maxPEMFile)
	if err != nil {
		return nil, err
	}
	certs, key, err := parseCertKey(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", FileCAKey, err)
	}
	ca := &CA{Cert: certs[0], Key: key}
	if !ca.Cert.IsCA {
		return nil, fmt.Errorf("%w: %s: the certificate is not a CA", ErrBadPEM, FileCAKey)
	}
	// The roots file may lag the key file after a crash during Rotate: the
	// key file's CA is always trusted.
	trusted := []*x509.Certificate{ca.Cert}
	if r, err := LoadRoots(dir); err == nil {
		trusted = append(trusted, r.Certs()...)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	return &Authority{dir: dir, clk: clk, ca: ca, roots: NewRoots(trusted...)}, nil
}

// CA returns the current CA.
func (a *Authority) CA() *CA {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.ca
}

// Roots returns the trusted CAs, current first.
func (a *Authority) Roots() *Roots {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.roots
}

// Fingerprint is the current CA's fingerprint (what new join tokens pin).
func (a *Authority) Fingerprint() Fingerprint { return a.CA().Fingerprint() }

// Sign issues a certificate for name and role with the current CA (see
// CA.Sign); ttl 0 means DefaultCertTTL.
func (a *Authority) Sign(csr *x509.CertificateRequest, name string, role Role, ttl time.Duration) (*x509.Certificate, error) {
	return a.CA().Sign(csr, name, role, ttl, a.clk.Now())
}

// Rotating reports whether a rotation is running (two CAs trusted).
func (a *Authority) Rotating() bool { return len(a.Roots().Certs()) > 1 }

// Rotate makes a new CA, which signs from now on, and keeps the old one
// trusted until FinishRotation. Certificates of the old CA stay valid
// during the overlap; nodes renew onto the new CA. Join tokens pin a CA, so
// tokens made before the rotation stop working: make new ones.
func (a *Authority) Rotate() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.roots.Certs()) > 1 {
		return fmt.Errorf("%w: a rotation is already running; finish it first (harn mesh ca rotate --finish)", ErrRotation)
	}
	ca, err := NewCA(a.clk.Now(), DefaultCATTL)
	if err != nil {
		return err
	}
	roots := NewRoots(ca.Cert, a.ca.Cert)
	if err := InstallCA(a.dir, ca, roots); err != nil {
		return err
	}
	a.ca, a.roots = ca, roots
	return nil
}

// FinishRotation stops trusting the previous CA. Every certificate it
// signed is refused from then on.
func (a *Authority) FinishRotation() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.roots.Certs()) < 2 {
		return fmt.Errorf("%w: no rotation is running", ErrRotation)
	}
	roots := NewRoots(a.ca.Cert)
	if err := SaveRoots(a.dir, roots); err != nil {
		return err
	}
	a.roots = roots
	return nil
}

// CAPEM is the current CA's certificate and key as PEM, for handing to a
// server that joins (it is the mesh's most valuable secret).
func (a *Authority) CAPEM() ([]byte, error) {
	ca := a.CA()
	k, err := keyPEM(ca.Key)
	if err != nil {
		return nil, err
	}
	return append(certPEM(ca.Cert), k...), nil
}

// InstallCA writes ca as the current CA of dir and roots as its trusted
// set (the roots file first, so that a crash in between leaves both CAs
// trusted).
func InstallCA(dir string, ca *CA, roots *Roots) error {
	if err := EnsurePrivateDir(dir); err != nil {
		return err
	}
	if err := SaveRoots(dir, NewRoots(append(roots.Certs(), ca.Cert)...)); err != nil {
		return err
	}
	k, err := keyPEM(ca.Key)
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, FileCAKey), append(certPEM(ca.Cert), k...))
}

// ParseCAPEM reads a CA's certificate and key (the form CAPEM writes).
func ParseCAPEM(b []byte) (*CA, error) {
	certs, key, err := parseCertKey(b)
	if err != nil {
		return nil, err
	}
	if len(certs) != 1 || !certs[0].IsCA {
		return nil, fmt.Errorf("%w: want one CA certificate and its key", ErrBadPEM)
	}
	return &CA{Cert: certs[0], Key: key}, nil
}

// SaveRoots writes the trusted CAs (FileRoots) atomically, mode 0600.
func SaveRoots(dir string, roots *Roots) error {
	if err := EnsurePrivateDir(dir); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, FileRoots), roots.PEM())
}

// LoadRoots reads the trusted CAs of dir (fs.ErrNotExist when absent).
func LoadRoots(dir string) (*Roots, error) {
	b, err := readSecretFile(filepath.Join(dir, FileRoots), maxPEMFile)
	if err != nil {
		return nil, err
	}
	r, err := ParseRoots(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", FileRoots, err)
	}
	return r, nil
}

// SaveNodeCert writes this node's certificate and key (FileNode) atomically
// in one file, mode 0600.
func SaveNodeCert(dir string, cert *x509.Certificate, key crypto.Signer) error {
	if err := EnsurePrivateDir(dir); err != nil {
		return err
	}
	k, err := keyPEM(key)
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, FileNode), append(certPEM(cert), k...))
}

// LoadNodeCert reads this node's certificate and key (fs.ErrNotExist when
// the node has not joined yet).
func LoadNodeCert(dir string) (tls.Certificate, error) {
	b, err := readSecretFile(filepath.Join(dir, FileNode), maxPEMFile)
	if err != nil {
		return tls.Certificate{}, err
	}
	certs, key, err := parseCertKey(b)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("%s: %w", FileNode, err)
	}
	return TLSCertificate(certs[0], key), nil
}

// TLSCertificate pairs a certificate with its key for crypto/tls.
func TLSCertificate(cert *x509.Certificate, key crypto.Signer) tls.Certificate {
	return tls.Certificate{Certificate: [][]byte{cert.Raw}, PrivateKey: key, Leaf: cert}
}
