package gossip

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/text"
)

// Entry is what a node gossips about one of its sessions: small and
// bounded, so that one delta fits a UDP packet.
type Entry struct {
	SessionID       string    `json:"id"`
	ParentSessionID string    `json:"parent,omitempty"`
	Name            string    `json:"name,omitempty"`
	Agent           string    `json:"agent,omitempty"`
	Task            string    `json:"task,omitempty"`
	Activity        string    `json:"activity"`
	ActivityAt      time.Time `json:"activity_at,omitzero"`
	ActivitySource  string    `json:"activity_source,omitempty"`
	TaskState       string    `json:"task_state"`
	TaskStateAt     time.Time `json:"task_state_at,omitzero"`
	BlockerReason   string    `json:"blocker,omitempty"`
	Claims          []string  `json:"claims,omitempty"`
	ClaimCount      int       `json:"claims_n,omitempty"`
	Ended           bool      `json:"ended,omitempty"`
	EndReason       string    `json:"end_reason,omitempty"`
	StartedAt       time.Time `json:"started_at,omitzero"`
	LastEventAt     time.Time `json:"last_event_at,omitzero"`
	Hash            string    `json:"hash"`
	HarnTask        *HarnTask `json:"harn_task,omitempty"`
	// WaitingOn is what a needs_input session waits on; EvidenceAt its
	// latest evidence of acting (refreshed at most every EvidenceRefresh
	// while nothing else changes); Repo and Branch where it runs; NameSeen
	// the suggested name the agent was last seen showing.
	WaitingOn  string    `json:"waiting_on,omitempty"`
	EvidenceAt time.Time `json:"evidence_at,omitzero"`
	Repo       string    `json:"repo,omitempty"`
	Branch     string    `json:"branch,omitempty"`
	NameSeen   string    `json:"name_seen,omitempty"`
}

// maxDeltaBytes bounds an encoded entry: a frame keeps room for the
// signature and for the origin and key (64 bytes).
const maxDeltaBytes = mesh.MaxFrameSize - mesh.MaxSignatureSize - 64

// Bounds of a gossiped entry.
const (
	taskChars   = 160
	reasonChars = presence.MaxHashedReason
	maxClaims   = 6
	// waitChars bounds WaitingOn (presence.MaxWaitingOnChars), whereChars
	// Repo and Branch, seenChars NameSeen.
	waitChars  = presence.MaxWaitingOnChars
	whereChars = 80
	seenChars  = 160
)

// EntryOf is the gossiped entry of a session state whose presence hash is
// hash.
func EntryOf(s *presence.State, hash string) Entry {
	e := Entry{SessionID: s.SessionID, ParentSessionID: s.ParentSessionID, Name: s.Name,
		Agent: s.Agent, Task: text.Clip(s.Task, taskChars), Activity: string(s.Activity),
		ActivityAt: s.ActivityUpdatedAt, ActivitySource: s.ActivitySource, TaskState: string(s.TaskState),
		TaskStateAt: s.TaskStateUpdatedAt, BlockerReason: text.Clip(s.BlockerReason, reasonChars),
		ClaimCount: len(s.Claims), Ended: s.Ended, EndReason: s.EndReason, StartedAt: s.StartedAt,
		LastEventAt: s.LastEventAt, Hash: hash,
		WaitingOn: text.Clip(s.WaitingOn, waitChars), EvidenceAt: s.LastEvidenceAt,
		Repo: text.Clip(s.Repo, whereChars), Branch: text.Clip(s.Branch, whereChars),
		NameSeen: text.Clip(s.SessionNameSeenFor, seenChars)}
	if len(s.Claims) > 0 {
		n := min(len(s.Claims), maxClaims)
		e.Claims = append([]string(nil), s.Claims[:n]...)
	}
	return e
}

// EncodeDelta encodes an entry to fit one gossip frame, dropping detail
// (claims, then the length of the texts, then the least needed fields)
// until it does.
func EncodeDelta(e Entry) ([]byte, error) {
	for step := 0; ; step++ {
		b, err := json.Marshal(e)
		if err != nil || len(b) <= maxDeltaBytes {
			return b, err
		}
		switch step {
		case 0:
			e.Claims = nil
		case 1:
			e.Task = text.Clip(e.Task, 40)
			e.BlockerReason = text.Clip(e.BlockerReason, 40)
			e.WaitingOn = text.Clip(e.WaitingOn, 40)
			e.NameSeen = ""
		case 2:
			e.ActivitySource, e.EndReason = "", ""
			e.Repo, e.Branch = text.Clip(e.Repo, 24), text.Clip(e.Branch, 24)
		default:
			e.Task, e.BlockerReason, e.Name = "", "", text.Clip(e.Name, 20)
			if e.HarnTask != nil {
				ht := *e.HarnTask
				ht.Text, ht.PendingCalls = "", nil
				e.HarnTask = &ht
			}
			e.WaitingOn, e.Repo, e.Branch = text.Clip(e.WaitingOn, 12), "", ""
			b, err := json.Marshal(e)
			if err != nil || len(b) <= maxDeltaBytes {
				return b, err
			}
			// Ids and agent type at their longest: the parent link and
			// the agent's full type go last.
			e.ParentSessionID, e.Agent, e.ActivityAt, e.TaskStateAt = "", text.Clip(e.Agent, 24), time.Time{}, time.Time{}
			return json.Marshal(e)
		}
	}
}

// State turns a gossiped entry of node's into a session state for readers.
func (e *Entry) State(node string) presence.State {
	s := presence.State{SessionID: e.SessionID, ParentSessionID: e.ParentSessionID, Agent: e.Agent,
		Node: node, Name: e.Name, Activity: presence.Activity(e.Activity), ActivityUpdatedAt: e.ActivityAt,
		ActivitySource: e.ActivitySource, TaskState: presence.TaskState(e.TaskState),
		TaskStateUpdatedAt: e.TaskStateAt, BlockerReason: e.BlockerReason, Task: e.Task,
		Claims: e.Claims, StartedAt: e.StartedAt, LastEventAt: e.LastEventAt, Ended: e.Ended,
		EndReason: e.EndReason, WaitingOn: e.WaitingOn, LastEvidenceAt: e.EvidenceAt, Repo: e.Repo,
		Branch: e.Branch, SessionNameSeenFor: e.NameSeen}
	if s.BlockerReason != "" {
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
