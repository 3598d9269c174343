package trust

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"
)

// FileTokenStore is a TokenStore in one JSON file (mode 0600, written
// atomically). A mutex serialises this process's calls; the file has one
// writer, the node. Records expired for a week are dropped on the next
// write.
type FileTokenStore struct {
	path string
	mu   sync.Mutex
}

var _ TokenStore = (*FileTokenStore)(nil)

// purgeAfter is how long an expired record is kept (so that its redeemer
// hears "expired", not "unknown").
const purgeAfter = 7 * 24 * time.Hour

// maxTokenFile bounds the token file.
const maxTokenFile = 4 << 20

type tokenFile struct {
	Version int           `json:"version"`
	Tokens  []TokenRecord `json:"tokens"`
}

// OpenFileTokenStore opens (or prepares) the token file at path. Its
// directory is created 0700 when missing; an existing file that others
// can read is refused.
func OpenFileTokenStore(path string) (*FileTokenStore, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("trust: token store: %w", err)
	}
	s := &FileTokenStore{path: path}
	if _, err := s.load(); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *FileTokenStore) load() (map[string]TokenRecord, error) {
	b, err := readSecretFile(s.path, maxTokenFile)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]TokenRecord{}, nil
	}
	if err != nil {
		return nil, err
	}
	var f tokenFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("trust: token store %s: %w", s.path, err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("trust: token store %s: version %d (want 1)", s.path, f.Version)
	}
	m := make(map[string]TokenRecord, len(f.Tokens))
	for _, r := range f.Tokens {
		m[r.ID] = r
	}
	return m, nil
}

func (s *FileTokenStore) save(m map[string]TokenRecord, now time.Time) error {
	f := tokenFile{Version: 1}
	for _, r := range m {
		if now.Sub(r.Expires) > purgeAfter {
			continue
		}
		f.Tokens = append(f.Tokens, r)
	}
	sortRecords(f.Tokens)
	b, err := json.MarshalIndent(&f, "", "  ")
	if err != nil {
		return fmt.Errorf("trust: token store: %w", err)
	}
	return writeFileAtomic(s.path, b)
}

func sortRecords(rs []TokenRecord) {
	sort.Slice(rs, func(i, j int) bool {
		if !rs[i].Created.Equal(rs[j].Created) {
			return rs[i].Created.Before(rs[j].Created)
		}
		return rs[i].ID < rs[j].ID
	})
}

// Create stores rec.
func (s *FileTokenStore) Create(rec TokenRecord) error {
	if !validTokenID(rec.ID) || len(rec.SecretHash) != 64 {
		return fmt.Errorf("%w: record has a malformed id or hash", ErrBadToken)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.load()
	if err != nil {
		return err
	}
	if _, dup := m[rec.ID]; dup {
		return fmt.Errorf("%w: token id %s exists", ErrBadToken, rec.ID)
	}
	m[rec.ID] = rec
	return s.save(m, rec.Created)
}

// Redeem checks and counts one use.
func (s *FileTokenStore) Redeem(id, secret string, now time.Time) (Role, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.load()
	if err != nil {
		return "", err
	}
	rec, ok := m[id]
	if !ok {
		return "", fmt.Errorf("%w: %s", ErrTokenUnknown, clipName(id))
	}
	if err := rec.Check(secret, now); err != nil {
		return "", err
	}
	rec.Used++
	m[id] = rec
	if err := s.save(m, now); err != nil {
		return "", err
	}
	return rec.Role, nil
}

// Revoke deletes a token.
func (s *FileTokenStore) Revoke(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.load()
	if err != nil {
		return err
	}
	rec, ok := m[id]
	if !ok {
		return fmt.Errorf("%w: %s", ErrTokenUnknown, clipName(id))
	}
	delete(m, id)
	return s.save(m, rec.Created)
}

// List returns every record, oldest first.
func (s *FileTokenStore) List() ([]TokenRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m, err := s.load()
	if err != nil {
		return nil, err
	}
	out := make([]TokenRecord, 0, len(m))
	for _, r := range m {
		out = append(out, r)
	}
	sortRecords(out)
	return out, nil
}
