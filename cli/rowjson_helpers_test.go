package cli

import (
	"testing"
	"time"

	"github.com/harn-dev/harn/node/api"
)

// decodeJSONRoster is decodeRoster over rows in their JSON form (the
// tests write their fixtures as the JSON `agents list --json` prints).
func decodeJSONRoster(entries [][]byte, _ bool, now time.Time, after time.Duration) ([]*rosterRow, error) {
	rows := make([]*api.SessionRow, 0, len(entries))
	for _, b := range entries {
		r, err := api.UnmarshalRowJSON(b)
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return decodeRoster(rows, now, after)
}

// decodeRosterRow is one row from its JSON form.
func decodeRosterRow(b []byte, _ bool) (rosterRow, error) {
	s, err := api.UnmarshalRowJSON(b)
	if err != nil {
		return rosterRow{}, err
	}
	r, err := newRosterRow(s)
	if err != nil {
		return rosterRow{}, err
	}
	return *r, nil
}

// jsonRows are rows from their JSON form.
func jsonRows(t testing.TB, entries [][]byte) []*api.SessionRow {
	t.Helper()
	out := make([]*api.SessionRow, 0, len(entries))
	for _, b := range entries {
		r, err := api.UnmarshalRowJSON(b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}
