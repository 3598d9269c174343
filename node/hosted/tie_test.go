package hosted

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/util/procinfo"
)

func hookEvent(session, parent, hostedID string, p procinfo.Proc) presence.Event {
	e := presence.Event{SessionID: session, ParentSessionID: parent, Type: presence.TypeSessionStart, TS: time.Now(), Agent: "claude-code"}
	if hostedID != "" {
		e.SetAttr(AttrHostedID, hostedID)
	}
	e.SetAttr(presence.AttrAgentPID, float64(p.PID))
	e.SetAttr(presence.AttrAgentStart, float64(p.Start))
	return e
}

// TestTheHooksOfAHostedAgentReachItsRow: events whose hook names the
// hosted session and whose agent process runs below the hosted process
// take the hosted session's id (the agent's own id kept as an
// attribute), and a subagent's parent link follows.
func TestTheHooksOfAHostedAgentReachItsRow(t *testing.T) {
	r, _ := newRoom(t, nil)
	pidFile := filepath.Join(t.TempDir(), "pid")
	in, err := r.Start(Spec{Agent: "shell", Name: "tree", Argv: []string{"/bin/sh", "-c", "sleep 60 & echo $! > " + pidFile + "; wait"}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var child procinfo.Proc
	eventually(t, "the child runs", func() bool {
		b, _ := os.ReadFile(pidFile)
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return false
		}
		child, err = procinfo.Lookup(pid)
		return err == nil
	})
	evs := []presence.Event{
		hookEvent("claude-uuid-1", "", in.ID, child),
		hookEvent("agent-7", "claude-uuid-1", in.ID, child),
	}
	if err := r.Tie(evs); err != nil {
		t.Fatal(err)
	}
	if evs[0].SessionID != in.ID || evs[0].AttrString(AttrAgentSession) != "claude-uuid-1" {
		t.Fatalf("the hook's event was not tied: %+v", evs[0])
	}
	if evs[1].SessionID != "agent-7" || evs[1].ParentSessionID != in.ID {
		t.Fatalf("the subagent's parent link: %+v", evs[1])
	}
}

// TestAForgedHostedIDCannotClaimASession: a process outside the hosted
// tree that sets HARN_HOSTED_ID keeps its own session; events naming a
// hosted session's id from outside its tree are refused.
func TestAForgedHostedIDCannotClaimASession(t *testing.T) {
	r, _ := newRoom(t, nil)
	in, _ := startFake(t, r, false)
	self, err := procinfo.Lookup(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	evs := []presence.Event{hookEvent("intruder", "", in.ID, self)}
	if err := r.Tie(evs); err != nil {
		t.Fatal(err)
	}
	if evs[0].SessionID != "intruder" || evs[0].AttrString(AttrHostedID) != "" {
		t.Fatalf("a forged hosted id claimed the session: %+v", evs[0])
	}
	direct := []presence.Event{hookEvent(in.ID, "", "", self)}
	if err := r.Tie(direct); !errors.Is(err, ErrForged) {
		t.Fatalf("events naming the hosted id from outside: want ErrForged, got %v", err)
	}
	// The hosted process itself may.
	own := []presence.Event{hookEvent(in.ID, "", "", procinfo.Proc{PID: in.PID})}
	if err := r.Tie(own); err != nil {
		t.Fatalf("the hosted process's own event: %v", err)
	}
}
