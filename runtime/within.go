package runtime

import (
	"fmt"
	"strings"
)

// Within reports whether every grant of gs is covered by one of allowed;
// when not, it returns the first that is not. It decides grant by grant
// (Covers), so it errs on the side of refusing: a grant that only the
// union of several allowed grants covers is not within.
func Within(gs, allowed []Grant) (Grant, bool) {
	for _, g := range gs {
		ok := false
		for _, p := range allowed {
			if Covers(p, g) {
				ok = true
				break
			}
		}
		if !ok {
			return g, false
		}
	}
	return Grant{}, true
}

// Covers reports whether p gives at least what g gives: a level as high,
// no input pattern or the same one, no confirmation or g's too, and a
// capability pattern that takes in g's: a name p matches, or a pattern
// whose every name p matches (p's * stands for any run, g's * is taken as
// a literal character, which only p's * can absorb).
func Covers(p, g Grant) bool {
	if p.Level < g.Level || (p.Match != "" && p.Match != g.Match) || (p.Confirm && !g.Confirm) {
		return false
	}
	if p.Capability == g.Capability {
		return true
	}
	if !strings.Contains(p.Capability, "*") {
		return false
	}
	return globMatch(p.Capability, g.Capability, false)
}

// GrantsBeyondError refuses a task whose grants are wider than its
// session's: a session's tasks never hold more than the session was given.
type GrantsBeyondError struct {
	Session string
	Grant   Grant // the first grant the session's do not cover
}

func (e *GrantsBeyondError) Error() string {
	return fmt.Sprintf("runtime: grant %q is beyond what session %s was given; a task of a session never holds more than the session (name no grants to run with the session's, or start a new session with the wider profile)",
		strings.TrimSpace(string(FormatGrants([]Grant{e.Grant}))), e.Session)
}

// Unwrap makes a GrantsBeyondError an ErrCeilingGrows.
func (e *GrantsBeyondError) Unwrap() error { return ErrCeilingGrows }
