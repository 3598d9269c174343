package tasks

import (
	"time"

	"github.com/harn-dev/harn/runtime"
)

// Usage sums the model.call records of the node's ledger since since,
// grouped by "session", "agent" or "node" (and model).
func (h *Host) Usage(by string, since time.Time) ([]UsageRow, error) {
	rows := map[[2]string]*UsageRow{}
	var order [][2]string
	err := h.cfg.KV.ScanKV(Space, nil, func(_, v []byte) error {
		r, err := runtime.DecodeRecord(v)
		if err != nil || r.Kind != runtime.RecModel || r.Usage == nil || r.TS.Before(since) {
			return nil
		}
		key := r.Session
		switch by {
		case "agent":
			key = r.Usage.Agent
		case "node":
			key = r.Usage.Node
			if key == "" {
				key = h.cfg.Node
			}
		}
		k := [2]string{key, r.Capability}
		row := rows[k]
		if row == nil {
			row = &UsageRow{Key: key, Model: r.Capability}
			rows[k] = row
			order = append(order, k)
		}
		row.Calls++
		row.Estimated += r.Usage.Estimated
		row.Input += r.Usage.Input
		row.Output += r.Usage.Output
		row.CacheRead += r.Usage.CacheRead
		row.CacheWrite += r.Usage.CacheWrite
		return nil
	})
	out := make([]UsageRow, 0, len(order))
	for _, k := range order {
		out = append(out, *rows[k])
	}
	return out, err
}
