// Package acttoken is the approvals room's one-decision tokens: the
// secrets behind the Approve and Deny buttons of a needs_input
// notification (ntfy's http actions). A token is minted for one permission
// request and one decision when the notification is built; presented once
// to the board's POST /act, it makes that decision on that request and is
// spent. It opens nothing else: not the board, not another request, not
// the other decision. See DESIGN.md in this folder.
package acttoken

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/harn-dev/harn/util/clock"
	"github.com/harn-dev/harn/util/text"
)

// Decision is what a token decides.
type Decision string

// The decisions.
const (
	Allow Decision = "allow"
	Deny  Decision = "deny"
)

// Valid reports whether d is Allow or Deny.
func (d Decision) Valid() bool { return d == Allow || d == Deny }

// Prefix starts every token, so that one is told from the board's token in
// a log or a bug report. The rest is 32 random bytes, base64url.
const Prefix = "hact_"

// tokenLen is the length of a token: the prefix and 43 characters.
const tokenLen = len(Prefix) + 43

// Bounds.
const (
	// DefaultTTL is how long an unused token lives at most; a token also
	// ends with its request (Retain).
	DefaultTTL = time.Hour
	// MaxTTL bounds a configured TTL.
	MaxTTL = 24 * time.Hour
	// DefaultMax bounds the tokens kept; minting past it forgets the
	// expired ones first, then the oldest.
	DefaultMax = 512
	// MaxRequestID bounds the request id a token names.
	MaxRequestID = 128
)

// The refusals. Each is wrapped with what was presented; match them with
// errors.Is.
var (
	// ErrInvalid: not a token this node minted (forged, malformed, or
	// forgotten: expired long ago or pushed out by newer ones).
	ErrInvalid = errors.New("acttoken: not a valid action token")
	// ErrExpired: the token's time ran out before it was used.
	ErrExpired = errors.New("acttoken: the action token has expired")
	// ErrSpent: the token was used already; a token decides once.
	ErrSpent = errors.New("acttoken: the action token was already used")
	// ErrClosed: the token's request is no longer waiting (answered
	// another way, or its hook gave up).
	ErrClosed = errors.New("acttoken: the request of this action token is no longer waiting")
	// ErrOtherRequest: the token is for another request.
	ErrOtherRequest = errors.New("acttoken: the action token is for another request")
	// ErrOtherDecision: the token is for the other decision.
	ErrOtherDecision = errors.New("acttoken: the action token is for the other decision")
	// ErrBadRequest: Mint was given no request or no decision.
	ErrBadRequest = errors.New("acttoken: a token needs a request id and allow or deny")
)

// KV is where the store keeps its tokens: the node's ledger meta keys.
type KV interface {
	PutMeta(key string, val []byte) error
	GetMeta(key string) ([]byte, error)
}

// MetaKey is the KV key of the kept tokens.
const MetaKey = "acttoken.v1"

// Config configures a Store. Zero fields take the defaults.
type Config struct {
	Clock  clock.Clock
	TTL    time.Duration
	Max    int
	KV     KV // nil: memory only
	Logger *slog.Logger
}

type state string

const (
	stateLive   state = "live"
	stateSpent  state = "spent"
	stateClosed state = "closed"
)

// entry is one token as kept: its SHA-256, never the token itself.
type entry struct {
	Hash     string   `json:"hash"`
	Request  string   `json:"request"`
	Decision Decision `json:"decision"`
	Expires  int64    `json:"expires_unix_nano"`
	State    state    `json:"state"`
}

type saved struct {
	Version int      `json:"version"`
	Tokens  []*entry `json:"tokens"`
}

// Store holds the tokens of one node. It is safe for concurrent use.
type Store struct {
	cfg Config
	log *slog.Logger

	mu     sync.Mutex
	tokens map[string]*entry // by hash
}

// Open builds a store and loads the tokens its KV keeps (those not expired).
// Kept data it cannot read is dropped with a warning: every token in it is
// then refused, which fails safe.
func Open(cfg Config) *Store {
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	cfg.TTL = min(cfg.TTL, MaxTTL)
	if cfg.Max <= 0 {
		cfg.Max = DefaultMax
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	s := &Store{cfg: cfg, log: cfg.Logger, tokens: map[string]*entry{}}
	s.load()
	return s
}

func (s *Store) load() {
	if s.cfg.KV == nil {
		return
	}
	b, err := s.cfg.KV.GetMeta(MetaKey)
	if err != nil || len(b) == 0 {
		return
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var v saved
	if err := dec.Decode(&v); err != nil || v.Version != 1 {
		s.log.Warn("acttoken: the kept action tokens are unreadable; all are refused", "err", err, "version", v.Version)
		return
	}
	now := s.cfg.Clock.Now().UnixNano()
	for _, e := range v.Tokens {
		if e == nil || len(e.Hash) != 64 || !e.Decision.Valid() || e.Expires <= now || len(s.tokens) >= s.cfg.Max {
			continue
		}
		switch e.State {
		case stateLive, stateSpent, stateClosed:
			s.tokens[e.Hash] = e
		}
	}
}

// saveLocked keeps the tokens in the KV. Callers hold mu.
func (s *Store) saveLocked() {
	if s.cfg.KV == nil {
		return
	}
	v := saved{Version: 1, Tokens: make([]*entry, 0, len(s.tokens))}
	for _, e := range s.tokens {
		v.Tokens = append(v.Tokens, e)
	}
	b, err := json.Marshal(v)
	if err == nil {
		err = s.cfg.KV.PutMeta(MetaKey, b)
	}
	if err != nil {
		s.log.Warn("acttoken: keeping the action tokens", "err", err)
	}
}

func hashOf(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// Mint makes a token that makes decision d on request, once, within the
// TTL and while the request waits.
func (s *Store) Mint(request string, d Decision) (string, error) {
	if request == "" || len(request) > MaxRequestID || !d.Valid() {
		return "", fmt.Errorf("%w (request %q, decision %q)", ErrBadRequest, clip(request), clip(string(d)))
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	tok := Prefix + base64.RawURLEncoding.EncodeToString(b)
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked(now)
	for len(s.tokens) >= s.cfg.Max {
		var oldest *entry
		for _, e := range s.tokens {
			if oldest == nil || e.Expires < oldest.Expires || (e.Expires == oldest.Expires && e.Hash < oldest.Hash) {
				oldest = e
			}
		}
		delete(s.tokens, oldest.Hash)
	}
	e := &entry{Hash: hashOf(tok), Request: request, Decision: d, Expires: now.Add(s.cfg.TTL).UnixNano(), State: stateLive}
	s.tokens[e.Hash] = e
	s.saveLocked()
	return tok, nil
}

// pruneLocked forgets the expired tokens. Callers hold mu.
func (s *Store) pruneLocked(now time.Time) {
	for h, e := range s.tokens {
		if e.Expires <= now.UnixNano() {
			delete(s.tokens, h)
		}
	}
}

// Use spends token on decision d of request: nil exactly once for a token
// minted for that request and decision, before it expired and while its
// request waits. Every refusal leaves the token as it was, but a spent
// token stays spent.
func (s *Store) Use(token, request string, d Decision) error {
	if len(token) != tokenLen || !strings.HasPrefix(token, Prefix) {
		return ErrInvalid
	}
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.tokens[hashOf(token)]
	switch {
	case e == nil:
		return ErrInvalid
	case e.Expires <= now.UnixNano():
		delete(s.tokens, e.Hash)
		s.saveLocked()
		return ErrExpired
	case e.Request != request:
		return fmt.Errorf("%w (not %q)", ErrOtherRequest, clip(request))
	case e.Decision != d:
		return fmt.Errorf("%w (it is for %s)", ErrOtherDecision, e.Decision)
	case e.State == stateSpent:
		return ErrSpent
	case e.State == stateClosed:
		return ErrClosed
	}
	e.State = stateSpent
	s.saveLocked()
	return nil
}

// Retain closes the live tokens whose request is no longer open: a token
// ends with its request. Closed and spent tokens are kept until they
// expire, so that a late press is told why it is refused.
func (s *Store) Retain(open func(request string) bool) {
	now := s.cfg.Clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.tokens)
	changed := false
	s.pruneLocked(now)
	for _, e := range s.tokens {
		if e.State == stateLive && !open(e.Request) {
			e.State, changed = stateClosed, true
		}
	}
	if changed || len(s.tokens) != n {
		s.saveLocked()
	}
}

// Len is the number of tokens kept.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tokens)
}

// clip bounds presented text that goes into an error, on one safe line.
func clip(v string) string { return text.Clip(text.OneLine(v), 64) }
