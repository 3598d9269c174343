package desktop

import (
	"context"
	"fmt"
	"strings"
)

// Lifecycle is what harn knows of the session an entry maps to.
type Lifecycle struct {
	// Known is true when harn knows the session.
	Known bool
	// TaskState is the session's task_state (active, blocked, done), the
	// state of its latest durable lifecycle event; "" when unknown.
	TaskState string
	// Declared is true when the session has a lifecycle event; without one
	// its task_state is the compatibility default, active, and is no
	// evidence.
	Declared bool
}

// Evidence reports whether l is lifecycle evidence: a known session with a
// declared lifecycle.
func (l Lifecycle) Evidence() bool { return l.Known && l.Declared }

// Lifecycles looks up the lifecycle of a harn session by its exact id.
// A session harn does not know is (Lifecycle{}, nil); an error means the
// answer is unknown (no node answered).
type Lifecycles interface {
	Lifecycle(ctx context.Context, sessionID string) (Lifecycle, error)
}

// Row is an entry with the lifecycle of its session.
type Row struct {
	Entry
	Lifecycle Lifecycle
}

// Lookup pairs each entry of t with its session's lifecycle, asking lc
// once per session id. An entry with no cliSessionId maps to no session.
func Lookup(ctx context.Context, t *Tree, lc Lifecycles) ([]Row, error) {
	cache := map[string]Lifecycle{}
	rows := make([]Row, 0, len(t.Entries))
	for _, e := range t.Entries {
		r := Row{Entry: e}
		if id := e.CLISessionID; id != "" {
			l, ok := cache[id]
			if !ok {
				var err error
				l, err = lc.Lifecycle(ctx, id)
				if err != nil {
					return nil, fmt.Errorf("desktop: looking up session %q of %q: %w", id, e.Path, err)
				}
				cache[id] = l
			}
			r.Lifecycle = l
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// Title prefixes of the session-name projection.
const (
	PrefixDone    = "[DONE]"
	PrefixBlocked = "[BLOCKED]"
)

// Decision is tidy's verdict on one entry.
type Decision struct {
	Row
	Archive bool
	Reason  string
}

// Decide applies tidy's rules to one entry:
//   - an archived entry stays as it is;
//   - a [BLOCKED] title never qualifies;
//   - with lifecycle evidence, the entry is archived exactly when the
//     session's latest lifecycle event is done, whatever its title says;
//   - without it, a [DONE] title qualifies only with includeLegacy;
//     nothing else does.
func Decide(r Row, includeLegacy bool) Decision {
	d := Decision{Row: r}
	title := strings.TrimSpace(r.Title)
	switch {
	case r.Archived:
		d.Reason = "already archived"
	case strings.HasPrefix(title, PrefixBlocked):
		d.Reason = "a [BLOCKED] title never qualifies"
	case r.Lifecycle.Evidence():
		d.Archive = r.Lifecycle.TaskState == "done"
		d.Reason = "task_state " + r.Lifecycle.TaskState
	case strings.HasPrefix(title, PrefixDone) && includeLegacy:
		d.Archive = true
		d.Reason = "[DONE] title without lifecycle evidence (--include-legacy-prefix)"
	case strings.HasPrefix(title, PrefixDone):
		d.Reason = "[DONE] title without lifecycle evidence; pass --include-legacy-prefix to archive it"
	case r.CLISessionID == "":
		d.Reason = "no cliSessionId"
	case !r.Lifecycle.Known:
		d.Reason = "session unknown to harn"
	default:
		d.Reason = "no lifecycle declared"
	}
	return d
}

// PlanTidy decides every entry of t.
func PlanTidy(ctx context.Context, t *Tree, lc Lifecycles, includeLegacy bool) ([]Decision, error) {
	rows, err := Lookup(ctx, t, lc)
	if err != nil {
		return nil, err
	}
	out := make([]Decision, 0, len(rows))
	for _, r := range rows {
		out = append(out, Decide(r, includeLegacy))
	}
	return out, nil
}

// Archive sets isArchived to true in e's file, changing nothing else: it
// reads the file again (its session id must be unchanged), and rewrites it
// atomically with its mode. A file already archived is left untouched.
func Archive(e Entry) error {
	f, obj, b, mode, err := readEntry(e.Path)
	if err != nil {
		return err
	}
	if f.CLISessionID != e.CLISessionID {
		return fmt.Errorf("%w: %q now holds session %q, not %q; run the command again", ErrChanged, e.Path, f.CLISessionID, e.CLISessionID)
	}
	if f.Archived {
		return nil
	}
	obj[fieldArchived] = []byte("true")
	out, err := encodeEntry(obj, b)
	if err != nil {
		return err
	}
	return writeAtomic(e.Path, out, mode)
}
