package sessions

import (
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/harn-dev/harn/node/ledger"
)

// names are the short memorable session names ("Agent Sable").
var names = []string{
	"Sable", "Onyx", "Juniper", "Wren", "Cobalt", "Ember", "Fable", "Harbor", "Iris", "Jasper",
	"Kestrel", "Linden", "Marlow", "Nimbus", "Orchid", "Pike", "Quill", "Rowan", "Sorrel", "Tamsin",
	"Umber", "Vesper", "Willow", "Yarrow", "Zephyr", "Alder", "Birch", "Cedar", "Dune", "Echo",
	"Flint", "Garnet", "Hazel", "Indigo", "Jade", "Kite", "Lark", "Moss", "Nova", "Opal",
	"Pebble", "Quartz", "Raven", "Slate", "Thistle", "Vale", "Aspen", "Basil", "Clover", "Delta",
	"Fern", "Gale", "Heron", "Ivy", "Juno", "Koi", "Lumen", "Maple", "Nettle", "Otter",
	"Pine", "Rook", "Sage", "Tide", "Vireo", "Wisp", "Amber", "Briar", "Cinder", "Dove",
	"Finch", "Gorse", "Hollow", "Lapis", "Mica", "Nectar", "Oriel", "Plume", "Reed", "Sparrow",
}

// pickName returns a name not in taken, starting at a place derived from
// the session id so that names spread; when every name is taken it adds a
// number.
func pickName(session string, taken map[string]bool) string {
	h := fnv.New32a()
	h.Write([]byte(session))
	start := int(h.Sum32() % uint32(len(names)))
	// With many live sessions, start at the round where free names are
	// likely, instead of trying every taken one.
	first := 1 + len(taken)/len(names)
	if first > 1 {
		first-- // the round below may have names freed by ended sessions
	}
	for round := first; round < first+1000; round++ {
		for i := range names {
			n := names[(start+i)%len(names)]
			if round > 1 {
				n = fmt.Sprintf("%s-%d", n, round)
			}
			if !taken[n] {
				return n
			}
		}
	}
	return session
}

// nameAskedKey is the ledger meta key that remembers, per session, the
// re-minted name its agent was last asked (at a stop) to show.
func nameAskedKey(session string) string { return "name-asked/" + session }

// PendingName is session's re-minted name when the agent has not shown it
// and has not been asked for it yet; asking marks it asked (durably, in
// the ledger's meta, so that a restart does not ask again). "" otherwise:
// an agent is asked once per re-mint.
func (s *Store) PendingName(session string) string {
	st, ok := s.State(session)
	if !ok || !st.NamePending() {
		return ""
	}
	key := nameAskedKey(session)
	prev, err := s.cfg.Ledger.GetMeta(key)
	if err != nil {
		s.log.Warn("pending name", "session", session, "err", err)
		return ""
	}
	if string(prev) == st.SuggestedSessionName {
		return ""
	}
	if err := s.cfg.Ledger.PutMeta(key, []byte(st.SuggestedSessionName)); err != nil && !errors.Is(err, ledger.ErrUnwritable) {
		// Not remembered: asking again at the next stop is better than
		// looping, and stop_hook_active prevents a loop anyway.
		s.log.Warn("pending name", "session", session, "err", err)
	}
	return st.SuggestedSessionName
}
