package board

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/text"
)

// compactionLine is one context.compacted event of a harn session, as the
// detail page's context section shows it: the method, the working set's
// tokens before and after, the budget, what was archived, and why a
// fallback ran. Every string is sanitized here and escaped by the template.
type compactionLine struct {
	When       stamp
	TS         string
	Method     string
	Before     string
	After      string
	Budget     string
	Archived   string
	Checkpoint string
	Note       string
}

// maxCompactions bounds the context section (newest first).
const maxCompactions = 200

// maxCompactionNote bounds a compaction's note on the page, in runes.
const maxCompactionNote = 300

// compactionsOf picks the compactions out of evs (newest first, as the
// trace is sorted).
func (s *Server) compactionsOf(evs []presence.Event) []compactionLine {
	now := s.cfg.Clock.Now()
	var out []compactionLine
	for _, e := range evs {
		if e.Type != presence.TypeContextCompacted {
			continue
		}
		if len(out) == maxCompactions {
			break
		}
		out = append(out, compactionLine{When: stampOf(now, e.TS), TS: presence.FormatTime(e.TS),
			Method: attrText(e.Attrs["method"], 40), Before: attrNumber(e.Attrs["before_tokens"]),
			After: attrNumber(e.Attrs["after_tokens"]), Budget: attrNumber(e.Attrs["budget_tokens"]),
			Archived: attrNumber(e.Attrs["archived_items"]), Checkpoint: attrNumber(e.Attrs["checkpoint"]),
			Note: attrText(e.Attrs["note"], maxCompactionNote)})
	}
	return out
}

// attrText is a string attribute, one line, sanitized and clipped.
func attrText(v any, n int) string {
	s, _ := v.(string)
	return text.Clip(text.Sanitize(text.OneLine(s)), n)
}

// attrNumber is a count attribute as digits ("" when it is not a number).
func attrNumber(v any) string {
	switch x := v.(type) {
	case int:
		return strconv.Itoa(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case uint64:
		return strconv.FormatUint(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case json.Number:
		if _, err := x.Float64(); err == nil {
			return x.String()
		}
	case string:
		if _, err := strconv.ParseFloat(x, 64); err == nil {
			return text.Clip(x, 20)
		}
	}
	if v == nil {
		return ""
	}
	return text.Clip(text.Sanitize(fmt.Sprint(v)), 20)
}
