package gossip

import (
	"encoding/json"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/text"
)

// Entry is what a node gossips about one of its sessions: its roster row
// (api.SessionRow, the one form of a row), bounded so that one delta fits a
// UDP packet, and its presence hash. On the wire it is an api.GossipEntry.
type Entry struct {
	*api.SessionRow
	Hash string
}

// maxDeltaBytes bounds an encoded entry: a frame keeps room for the
// signature and for the origin and key (64 bytes).
const maxDeltaBytes = mesh.MaxFrameSize - mesh.MaxSignatureSize - 64

// Bounds of a gossiped row.
const (
	taskChars   = 160
	reasonChars = presence.MaxHashedReason
	maxClaims   = 6
	// waitChars bounds WaitingOn (presence.MaxWaitingOnChars), whereChars
	// Repo, Branch and Project, seenChars the names, cwdChars the cwd.
	waitChars  = presence.MaxWaitingOnChars
	whereChars = 80
	seenChars  = 160
	cwdChars   = 160
)

// EntryOf is the gossiped entry of a session state whose presence hash is
// hash: its row, bounded. What a reader works out itself (silence, the
// child a parent shows) is not sent.
func EntryOf(s *presence.State, hash string) Entry {
	r := api.RowOf(s)
	r.Task = text.Clip(r.Task, taskChars)
	r.BlockerReason = text.Clip(r.BlockerReason, reasonChars)
	r.LifecycleReason = text.Clip(r.LifecycleReason, reasonChars)
	r.WaitingOn = text.Clip(r.WaitingOn, waitChars)
	r.Repo, r.Branch, r.Project = text.Clip(r.Repo, whereChars), text.Clip(r.Branch, whereChars), text.Clip(r.Project, whereChars)
	r.SessionNameSeenFor = text.Clip(r.SessionNameSeenFor, seenChars)
	r.SuggestedSessionName = text.Clip(r.SuggestedSessionName, seenChars)
	r.SessionName = text.Clip(r.SessionName, seenChars)
	r.Cwd = text.Clip(r.Cwd, cwdChars)
	r.SilentSinceUnixNano, r.WaitingChild = 0, ""
	r.ClaimCount = int32(len(s.Claims))
	if len(s.Claims) > maxClaims {
		r.Claims = s.Claims[:maxClaims]
	}
	if len(r.Claims) > 0 {
		r.Claims = append([]string(nil), r.Claims...)
	}
	if len(r.PendingClaims) > maxClaims {
		r.PendingClaims = r.PendingClaims[:maxClaims]
	}
	if len(r.PendingClaims) > 0 {
		r.PendingClaims = append([]string(nil), r.PendingClaims...)
	}
	return Entry{SessionRow: r, Hash: hash}
}

// trimStep is one step of TrimOrder.
type trimStep struct {
	// What the step gives up, for people.
	What string
	Do   func(r *api.SessionRow)
}

// TrimOrder is the one order in which a gossiped row gives up detail when
// its delta is over a frame: EncodeDelta applies the steps one after the
// other, each on top of the ones before, until the delta fits. What a
// reader needs least goes first; the ids, the two axes and their times
// are never given up.
var TrimOrder = []trimStep{
	{"a hosted terminal's peek to 2 lines of 60 runes", func(r *api.SessionRow) {
		if h := r.Hosted; h != nil {
			peek := h.Peek
			if len(peek) > 2 {
				peek = peek[len(peek)-2:]
			}
			v := &api.HostedView{Worktree: text.Clip(h.Worktree, 60), Branch: h.Branch, LaunchedAs: h.LaunchedAs, Attached: h.Attached, Queued: h.Queued}
			for _, l := range peek {
				v.Peek = append(v.Peek, text.Clip(l, 60))
			}
			r.Hosted = v
		}
	}},
	{"pending claims and the agent's process", func(r *api.SessionRow) {
		r.PendingClaims, r.AgentPid, r.AgentPidStart = nil, 0, 0
	}},
	{"claims (their count stays)", func(r *api.SessionRow) { r.Claims = nil }},
	{"the cwd and the names the agent showed", func(r *api.SessionRow) {
		r.Cwd, r.SessionNameSeenFor, r.SuggestedSessionName, r.SessionName = "", "", "", ""
	}},
	{"texts to 40 runes", func(r *api.SessionRow) {
		r.Task, r.BlockerReason = text.Clip(r.Task, 40), text.Clip(r.BlockerReason, 40)
		r.LifecycleReason, r.WaitingOn = text.Clip(r.LifecycleReason, 40), text.Clip(r.WaitingOn, 40)
	}},
	{"sources and end reason; where to 24 runes", func(r *api.SessionRow) {
		r.ActivitySource, r.EndReason = "", ""
		r.Repo, r.Branch, r.Project = text.Clip(r.Repo, 24), text.Clip(r.Branch, 24), text.Clip(r.Project, 24)
	}},
	{"the texts; the harn task's text and calls", func(r *api.SessionRow) {
		r.Task, r.BlockerReason, r.LifecycleReason, r.Name = "", "", "", text.Clip(r.Name, 20)
		if t := r.HarnTask; t != nil {
			r.HarnTask = &api.HarnTask{Id: t.Id, State: t.State, Status: t.Status, QueueDepth: t.QueueDepth}
		}
		r.WaitingOn, r.Repo, r.Branch, r.Project = text.Clip(r.WaitingOn, 12), "", "", ""
	}},
	{"the parent link, the agent's full type and the axis times", func(r *api.SessionRow) {
		r.ParentSessionId, r.Agent = "", text.Clip(r.Agent, 24)
		r.ActivityUpdatedAtUnixNano, r.TaskStateUpdatedAtUnixNano = 0, 0
	}},
}

func (e Entry) wire() *api.GossipEntry { return &api.GossipEntry{Row: e.SessionRow, Hash: e.Hash} }

// EncodeDelta encodes an entry to fit one gossip frame, giving up detail
// in TrimOrder until it does. e is not changed.
func EncodeDelta(e Entry) ([]byte, error) {
	if e.SessionRow == nil {
		e.SessionRow = &api.SessionRow{}
	}
	b, err := proto.Marshal(e.wire())
	if err != nil || len(b) <= maxDeltaBytes {
		return b, err
	}
	r := proto.Clone(e.SessionRow).(*api.SessionRow)
	for _, step := range TrimOrder {
		step.Do(r)
		b, err = proto.Marshal(&api.GossipEntry{Row: r, Hash: e.Hash})
		if err != nil || len(b) <= maxDeltaBytes {
			return b, err
		}
	}
	return b, nil
}

// DecodeDelta reads an entry EncodeDelta wrote.
func DecodeDelta(b []byte) (Entry, error) {
	var w api.GossipEntry
	if err := proto.Unmarshal(b, &w); err != nil {
		return Entry{}, fmt.Errorf("gossip: entry: %w", err)
	}
	if w.Row == nil {
		w.Row = &api.SessionRow{}
	}
	return Entry{SessionRow: w.Row, Hash: w.Hash}, nil
}

// MarshalJSON writes the entry in a blob: its delta encoding.
func (e Entry) MarshalJSON() ([]byte, error) {
	b, err := EncodeDelta(e)
	if err != nil {
		return nil, err
	}
	return json.Marshal(b)
}

// UnmarshalJSON reads an entry of a blob.
func (e *Entry) UnmarshalJSON(b []byte) error {
	var raw []byte
	if err := json.Unmarshal(b, &raw); err != nil {
		return fmt.Errorf("gossip: entry: %w", err)
	}
	d, err := DecodeDelta(raw)
	if err != nil {
		return err
	}
	*e = d
	return nil
}

// State turns a gossiped entry of node's into a session state for readers:
// the node is the sender's, whatever the row says.
func (e *Entry) State(node string) presence.State {
	s := e.SessionRow.State()
	s.Node = node
	if s.BlockerReason != "" && s.LifecycleReason == "" {
		s.LifecycleReason = s.BlockerReason
	}
	return s
}

// Blob is a node's full presence, exchanged on push/pull.
type Blob struct {
	Node    string  `json:"node"`
	At      uint64  `json:"at"`
	Entries []Entry `json:"entries"`
	// Versions parallel Entries.
	Versions []uint64 `json:"versions"`
}

// MaxBlobEntries bounds the entries of a peer's blob; a larger one is
// refused whole (ErrBlobTooLarge).
const MaxBlobEntries = 20000

// ErrBlobTooLarge: a peer's presence blob lists more entries than
// MaxBlobEntries.
var ErrBlobTooLarge = errors.New("gossip: presence blob over the entry bound")

// CheckBlob refuses a blob over the entry bounds.
func CheckBlob(b *Blob) error {
	if len(b.Entries) > MaxBlobEntries || len(b.Versions) > MaxBlobEntries {
		return fmt.Errorf("%w: %d entries and %d versions, the bound is %d", ErrBlobTooLarge, len(b.Entries), len(b.Versions), MaxBlobEntries)
	}
	return nil
}
