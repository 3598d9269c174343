package node

import (
	"errors"
	"time"

	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/node/spool"
	"github.com/harn-dev/harn/presence"
)

// drainSpool ingests every spooled record in order and removes each file
// once its events are durable. A record that cannot be decoded is moved to
// spool/bad and recorded as a diagnostic.
func (n *Node) drainSpool() {
	dir := SpoolDir(n.cfg.DataDir)
	files, err := spool.Pending(dir)
	if err != nil {
		n.log.Error("spool", "err", err)
		return
	}
	for _, f := range files {
		rec, err := spool.Read(f)
		if errors.Is(err, spool.ErrCorrupt) {
			n.diagnose("spool", err.Error(), 0, "")
			if qerr := spool.Quarantine(f); qerr != nil {
				n.log.Error("spool quarantine", "file", f, "err", qerr)
			}
			continue
		}
		if err != nil {
			n.log.Error("spool read", "file", f, "err", err)
			continue
		}
		if len(rec.Events) > 0 {
			if _, err := n.Ingest(rec.Events); err != nil {
				if errors.Is(err, presence.ErrInvalidEvent) {
					n.diagnose("spool", err.Error(), 0, "")
					spool.Quarantine(f)
				} else {
					n.log.Error("spool ingest", "file", f, "err", err)
				}
				continue
			}
		}
		if d := rec.Diagnostic; d != nil {
			n.addDiagnostic(ledger.Diagnostic{TS: presence.FormatTime(d.TS), Source: d.Source,
				Error: d.Error, InputBytes: d.InputBytes, InputDigest: d.InputDigest})
		}
		if err := spool.Remove(f); err != nil {
			n.log.Error("spool remove", "file", f, "err", err)
		}
	}
	spool.CleanTemps(dir, n.cfg.Clock.Now(), time.Hour)
}

func (n *Node) spoolLoop() { n.every(n.cfg.SpoolInterval, n.drainSpool) }

func (n *Node) diagnose(source, msg string, size int, digest string) {
	n.addDiagnostic(ledger.Diagnostic{TS: presence.FormatTime(n.cfg.Clock.Now()), Source: source,
		Error: msg, InputBytes: size, InputDigest: digest})
}

func (n *Node) addDiagnostic(d ledger.Diagnostic) {
	if _, err := n.ledger.AddDiagnostic(d); err != nil {
		n.log.Error("diagnostic", "err", err)
	}
}
