package mesh

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// peersFile is the PeersFile format: the addresses of the peers that were
// alive when it was written, which Start joins again after a restart.
type peersFile struct {
	Version int         `json:"version"`
	SavedAt time.Time   `json:"saved_at"`
	Peers   []peerEntry `json:"peers"`
}

type peerEntry struct {
	Name string `json:"name"`
	Addr string `json:"addr"` // host:port
}

// loadPeers reads PeersFile; a missing file is no peers.
func loadPeers(path string) ([]peerEntry, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("mesh: read peers file: %w", err)
	}
	var pf peersFile
	if err := json.Unmarshal(b, &pf); err != nil {
		return nil, fmt.Errorf("mesh: peers file %s is corrupt (delete it; it is rebuilt): %w", path, err)
	}
	return pf.Peers, nil
}

// savePeers writes PeersFile atomically: a temporary file in the same
// folder, synced, renamed over the old one, and the folder synced.
func savePeers(path string, peers []peerEntry, now time.Time) error {
	sort.Slice(peers, func(i, j int) bool { return peers[i].Name < peers[j].Name })
	b, err := json.MarshalIndent(peersFile{Version: 1, SavedAt: now.UTC(), Peers: peers}, "", "  ")
	if err != nil {
		return fmt.Errorf("mesh: encode peers: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("mesh: peers file folder: %w", err)
	}
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("mesh: write peers file: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("mesh: write peers file: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}

// persistPeers writes the alive peers if they changed since the last write.
// A node alone writes nothing: the file keeps the peers it had, which are
// exactly the ones it must try after waking up or restarting.
func (m *Mesh) persistPeers() {
	if m.cfg.PeersFile == "" {
		return
	}
	m.mu.Lock()
	var peers []peerEntry
	for _, r := range m.members {
		if r.Name != m.cfg.Name && (r.Status == StatusAlive || r.Status == StatusSuspect) {
			peers = append(peers, peerEntry{Name: r.Name, Addr: r.Address()})
		}
	}
	m.mu.Unlock()
	if len(peers) == 0 {
		return
	}
	sort.Slice(peers, func(i, j int) bool { return peers[i].Name < peers[j].Name })
	key := fmt.Sprint(peers)
	if key == m.lastPersisted {
		return
	}
	if err := savePeers(m.cfg.PeersFile, peers, m.cfg.Clock.Now()); err != nil {
		m.log.Warn("persist peers", "err", err)
		return
	}
	m.lastPersisted = key
	m.log.Debug("peers persisted", "n", len(peers))
}
