package tui

// minShort is the shortest id shown: the kind's prefix ("h-", "t-") and
// six characters.
const minShort = 8

// shortIDs shows ids by their shortest unique prefix among the ids it
// knows, as git shows commits, never shorter than minShort.
type shortIDs struct {
	known map[string]struct{}
	cache map[string]string
	// gen moves whenever an id is learnt: a prefix shown before may now
	// be ambiguous, so drawings that show ids are made again.
	gen int
}

func newShortIDs() *shortIDs {
	return &shortIDs{known: map[string]struct{}{}, cache: map[string]string{}}
}

// maxKnownIDs bounds the ids kept; past it they are forgotten and
// relearnt from what is on screen.
const maxKnownIDs = 20_000

// learn adds ids to the known set.
func (s *shortIDs) learn(ids ...string) {
	for _, id := range ids {
		if id == "" {
			continue
		}
		if _, ok := s.known[id]; ok {
			continue
		}
		if len(s.known) >= maxKnownIDs {
			clear(s.known)
		}
		s.known[id] = struct{}{}
		clear(s.cache)
		s.gen++
	}
}

// short is id's shortest unique prefix (id itself when it is short).
func (s *shortIDs) short(id string) string {
	if len(id) <= minShort {
		return id
	}
	if v, ok := s.cache[id]; ok {
		return v
	}
	s.learn(id)
	n := minShort
	for other := range s.known {
		if other == id {
			continue
		}
		c := commonPrefix(id, other) + 1
		if c > n {
			n = c
		}
	}
	v := id[:min(n, len(id))]
	s.cache[id] = v
	return v
}

func commonPrefix(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}
