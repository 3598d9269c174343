package claims

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"time"

	"github.com/harn-dev/harn/node/claims/claimwire"
)

// CallRef names the tool call a write request, a denial or a call's end
// is about (claimwire.CallRef).
type CallRef = claimwire.CallRef

// CallDigest is a digest of a tool call's tool and input, the same for
// the same input in any key order and spacing.
func CallDigest(tool string, input []byte) string {
	if len(input) == 0 {
		return ""
	}
	var v any
	canon := input
	if json.Unmarshal(input, &v) == nil {
		if b, err := json.Marshal(v); err == nil {
			canon = b // map keys sorted
		}
	}
	sum := sha256.Sum256(append([]byte(tool+"\x00"), canon...))
	return hex.EncodeToString(sum[:])
}

// takenCall is a write call in flight: announced, its end not seen yet.
type takenCall struct {
	ref CallRef
	at  time.Time
	// owned: the claims this call took (or inherited from a released
	// call), which its denial releases, per repository.
	owned map[string][]string
	// touch: every path the call writes, per repository.
	touch map[string][]string
	abs   map[string]map[string]string // repo -> path -> the hook's absolute path
}

// sameCall reports whether a new request of ref belongs to c.
func sameCall(c *takenCall, ref CallRef) bool {
	if ref.ID != "" || c.ref.ID != "" {
		return ref.ID == c.ref.ID
	}
	return true // id-less: the session's latest call (BeginCall starts a new one)
}

// matches reports whether an event about ref (a denial, a call's end)
// is about c.
func matches(c *takenCall, ref CallRef) bool {
	if c.ref.ID != "" && ref.ID != "" {
		return c.ref.ID == ref.ID
	}
	if ref.Digest != "" && c.ref.Digest == ref.Digest {
		return true
	}
	if c.ref.ID == "" && ref.ID == "" {
		return ref.Tool == "" || c.ref.Tool == "" || ref.Tool == c.ref.Tool
	}
	return false
}

// BeginCall starts the decision of a new write call of session. An agent
// that names no call ids makes its calls one at a time as harn sees them,
// so an id-less call ends the session's previous id-less one; a call with
// an id is tracked on its own.
func (d *Decider) BeginCall(session string, ref CallRef) {
	if ref.ID != "" {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.taken[session] = slices.DeleteFunc(d.taken[session], func(c *takenCall) bool { return c.ref.ID == "" })
	if len(d.taken[session]) == 0 {
		delete(d.taken, session)
	}
}

// noteTaken remembers what r's call took (need) and wrote (r.Paths).
func (d *Decider) noteTaken(r Request, need []string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var tc *takenCall
	for _, c := range d.taken[r.Session] {
		if sameCall(c, r.Call) {
			tc = c
			break
		}
	}
	if tc == nil {
		tc = &takenCall{ref: r.Call, at: d.cfg.Clock.Now(), owned: map[string][]string{}, touch: map[string][]string{},
			abs: map[string]map[string]string{}}
		d.taken[r.Session] = append(d.taken[r.Session], tc)
	}
	tc.owned[r.Repo] = union(tc.owned[r.Repo], need)
	tc.touch[r.Repo] = union(tc.touch[r.Repo], r.Paths)
	if tc.abs[r.Repo] == nil {
		tc.abs[r.Repo] = map[string]string{}
	}
	for p, a := range absOf(r) {
		tc.abs[r.Repo][p] = a
	}
}

func union(a, b []string) []string {
	for _, p := range b {
		if !slices.Contains(a, p) {
			a = append(a, p)
		}
	}
	return a
}

// detachLocked removes session's call i. Of what it owned, the paths
// another call in flight also writes pass to that call; the rest are
// returned, to be released if the call did not run. d.mu is held.
func (d *Decider) detachLocked(session string, i int) map[string][]string {
	calls := d.taken[session]
	tc := calls[i]
	calls = slices.Delete(calls, i, i+1)
	if len(calls) == 0 {
		delete(d.taken, session)
	} else {
		d.taken[session] = calls
	}
	free := map[string][]string{}
	for repo, paths := range tc.owned {
	next:
		for _, p := range paths {
			for _, o := range calls {
				if slices.Contains(o.touch[repo], p) {
					o.owned[repo] = union(o.owned[repo], []string{p})
					if o.abs[repo] == nil {
						o.abs[repo] = map[string]string{}
					}
					if a, ok := tc.abs[repo][p]; ok {
						o.abs[repo][p] = a
					}
					continue next
				}
			}
			free[repo] = append(free[repo], p)
		}
	}
	return free
}

// findLocked is the index of session's call that ref names, the latest
// if several match; -1 if none. An id-less ref with nothing else to go
// on names the only call of its tool. d.mu is held.
func (d *Decider) findLocked(session string, ref CallRef) int {
	calls := d.taken[session]
	for i := len(calls) - 1; i >= 0; i-- {
		if matches(calls[i], ref) {
			return i
		}
	}
	if ref.ID != "" {
		return -1
	}
	only := -1
	for i, c := range calls {
		if ref.Tool != "" && c.ref.Tool != ref.Tool {
			continue
		}
		if only >= 0 {
			return -1
		}
		only = i
	}
	return only
}

// ReleaseTaken releases the claims that session's call ref took (its
// write was denied after they were taken: the operator said no), recorded
// or pending, and tells the row. Claims the session held before the call,
// and paths another of its calls in flight also writes, stay.
func (d *Decider) ReleaseTaken(ctx context.Context, session string, ref CallRef) error {
	d.mu.Lock()
	i := d.findLocked(session, ref)
	if i < 0 {
		d.mu.Unlock()
		return nil
	}
	abs := d.taken[session][i].abs
	free := d.detachLocked(session, i)
	d.mu.Unlock()
	return d.releaseFree(ctx, session, free, abs)
}

// CallEnded is the end of session's call ref (PostToolUse). A call that
// ran keeps its claims, and the paths it wrote are no longer released by
// another call's denial; a call that failed (PostToolUseFailure: nothing
// was written) releases what it took. A call end that names its ID tells
// that the session's agent reports every call's end (see TurnEnded).
func (d *Decider) CallEnded(ctx context.Context, session string, ref CallRef, failed bool) error {
	d.mu.Lock()
	if ref.ID != "" {
		d.reportsEnds[session] = true
	}
	i := d.findLocked(session, ref)
	if i < 0 {
		d.mu.Unlock()
		return nil
	}
	tc := d.taken[session][i]
	if !failed {
		// Written: nobody's denial may release these paths now.
		for _, o := range d.taken[session] {
			if o == tc {
				continue
			}
			for repo, paths := range tc.touch {
				o.owned[repo] = slices.DeleteFunc(o.owned[repo], func(p string) bool { return slices.Contains(paths, p) })
			}
		}
		tc.owned = nil
	}
	abs := tc.abs
	free := d.detachLocked(session, i)
	d.mu.Unlock()
	return d.releaseFree(ctx, session, free, abs)
}

// TurnEnded is the end of session's turn (Stop, or the next prompt)
// stamped at: every call announced before it has run or never will. A
// call whose end never came was denied where harn cannot see it (the
// agent's own permission prompt) or blocked by another hook, so when the
// agent reports every call's end by ID (reportsEnds, or a call end with an
// ID seen from the session), the claims such a call took are released.
// Calls without an ID are forgotten, their claims kept: harn cannot tell
// whether they ran.
func (d *Decider) TurnEnded(ctx context.Context, session string, at time.Time, reportsEnds bool) error {
	d.mu.Lock()
	reportsEnds = reportsEnds || d.reportsEnds[session]
	type freed struct {
		free map[string][]string
		abs  map[string]map[string]string
	}
	var out []freed
	for {
		i := slices.IndexFunc(d.taken[session], func(c *takenCall) bool { return !c.at.After(at) })
		if i < 0 {
			break
		}
		tc := d.taken[session][i]
		if !reportsEnds || tc.ref.ID == "" {
			tc.owned = nil
		}
		abs := tc.abs
		out = append(out, freed{d.detachLocked(session, i), abs})
	}
	d.mu.Unlock()
	var first error
	for _, f := range out {
		if err := d.releaseFree(ctx, session, f.free, f.abs); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// SessionEnded forgets session's calls in flight (its claims end with it).
func (d *Decider) SessionEnded(session string) {
	d.mu.Lock()
	delete(d.taken, session)
	delete(d.reportsEnds, session)
	d.mu.Unlock()
}

// releaseFree releases free (per repository), recorded or pending, and
// tells the row.
func (d *Decider) releaseFree(ctx context.Context, session string, free map[string][]string, abs map[string]map[string]string) error {
	var first error
	repos := make([]string, 0, len(free))
	for r := range free {
		repos = append(repos, r)
	}
	slices.Sort(repos)
	for _, repo := range repos {
		paths := free[repo]
		if len(paths) == 0 {
			continue
		}
		dropped := d.dropPending(session, repo, paths)
		wctx, cancel := context.WithTimeout(ctx, d.cfg.Budget) // a hook waits on it
		err := d.Release(wctx, session, repo, false, paths...)
		cancel()
		if err != nil && first == nil {
			first = err
		}
		dropped = append(dropped, pick(abs[repo], paths)...)
		if d.cfg.Rows != nil && len(dropped) > 0 {
			slices.Sort(dropped)
			d.cfg.Rows.ClaimDropped(session, slices.Compact(dropped))
		}
	}
	return first
}
