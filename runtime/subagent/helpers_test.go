package subagent

import (
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/harn-dev/harn/util/clock"
)

// memStore is a Store in memory.
type memStore struct {
	mu   sync.Mutex
	recs map[string]Child
	fail error
}

func newMemStore() *memStore { return &memStore{recs: map[string]Child{}} }

func (s *memStore) Put(c Child) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return s.fail
	}
	s.recs[c.ID] = c
	return nil
}

func (s *memStore) Scan(fn func(Child) error) error {
	s.mu.Lock()
	cs := make([]Child, 0, len(s.recs))
	for _, c := range s.recs {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	sort.Slice(cs, func(i, j int) bool { return cs[i].ID < cs[j].ID })
	for _, c := range cs {
		if err := fn(c); err != nil {
			return err
		}
	}
	return nil
}

// fakeRunner records what the manager asks; children run only when the
// test says so.
type fakeRunner struct {
	mu       sync.Mutex
	started  []Spec
	running  map[string]bool
	asked    []string
	cancels  []string
	closed   []Child
	maxPer   map[string]int
	maxNode  int
	failNext error
	m        *Manager
}

func newFakeRunner() *fakeRunner {
	return &fakeRunner{running: map[string]bool{}, maxPer: map[string]int{}}
}

func (r *fakeRunner) Start(s Spec) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failNext != nil {
		err := r.failNext
		r.failNext = nil
		return err
	}
	r.started = append(r.started, s)
	r.running[s.Child.ID] = true
	n, per := 0, 0
	for id := range r.running {
		n++
		if r.parentOf(id) == s.Child.Parent {
			per++
		}
	}
	r.maxNode = max(r.maxNode, n)
	r.maxPer[s.Child.Parent] = max(r.maxPer[s.Child.Parent], per)
	return nil
}

func (r *fakeRunner) parentOf(id string) string {
	for _, s := range r.started {
		if s.Child.ID == id {
			return s.Child.Parent
		}
	}
	return ""
}

func (r *fakeRunner) Ask(child, text string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.running[child] {
		return errors.New("not running")
	}
	r.asked = append(r.asked, child)
	return nil
}

func (r *fakeRunner) Cancel(child, reason string) error {
	r.mu.Lock()
	r.cancels = append(r.cancels, child)
	r.mu.Unlock()
	return nil
}

func (r *fakeRunner) Close(c Child) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.running, c.ID)
	r.closed = append(r.closed, c)
}

func (r *fakeRunner) runningIDs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.started {
		if r.running[s.Child.ID] {
			out = append(out, s.Child.ID)
		}
	}
	return out
}

func (r *fakeRunner) spec(id string) Spec {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.started {
		if s.Child.ID == id {
			return s
		}
	}
	return Spec{}
}

var t0 = time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)

func newTestManager(t interface{ Fatal(...any) }, r *fakeRunner, st Store) *Manager {
	m, err := New(Config{Runner: r, Store: st, Clock: clock.NewFake(t0),
		Profiles: func(string) (map[string]Profile, error) { return Builtins(), nil }})
	if err != nil {
		t.Fatal(err)
	}
	r.m = m
	return m
}

const validHandoff = `{"status":"done","changes":["a.go: fixed"],"verification":"go test ./... passed","unresolved":[]}`
