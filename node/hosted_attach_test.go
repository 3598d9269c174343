package node

import (
	"bytes"
	"net"
	"testing"
	"time"

	"github.com/harn-dev/harn/mesh"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/tasks"
)

// attachVia opens an attach to session on n's local socket.
func attachVia(t *testing.T, n *Node, session string, readOnly bool) (net.Conn, *api.AttachFrame) {
	t.Helper()
	conn, err := net.Dial("unix", n.cfg.Socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := api.OpenAttach(conn, &api.AttachOpen{Session: session, Rows: 24, Cols: 80, ReadOnly: readOnly}); err != nil {
		t.Fatal(err)
	}
	first, err := api.ReadAttachFrame(conn)
	if err != nil {
		t.Fatal(err)
	}
	return conn, first
}

// readUntil reads an attach's frames until their data holds want.
func readUntil(t *testing.T, conn net.Conn, want string) {
	t.Helper()
	conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	defer conn.SetReadDeadline(time.Time{})
	var got []byte
	for !bytes.Contains(got, []byte(want)) {
		f, err := api.ReadAttachFrame(conn)
		if err != nil || f.End != nil {
			t.Fatalf("waiting for %q: %v %v (got %q)", want, err, f.GetEnd(), got)
		}
		got = append(got, f.Data...)
	}
}

// TestAnAttachThroughAPeerCarriesKeysBothWays: an attach on tw1's socket
// to a terminal tw0 hosts paints the screen, carries typed bytes and the
// echo, and two attaches at once each see the output; a detach leaves the
// agent running.
func TestAnAttachThroughAPeerCarriesKeysBothWays(t *testing.T) {
	m, tok := startTrustMeshWith(t, func(c *Config) {
		c.Cluster.RemoteControl = "tw0,tw1"
		c.Launchers = tasks.Launchers{"echo": echoArgv}
	})
	owner := m.nodes[0]
	viewer := m.join("tw1", tok, false)
	run, err := owner.hosts.Start(&api.HostedRunRequest{Agent: "echo", Dir: t.TempDir(), By: "test"}, false)
	if err != nil {
		t.Fatal(err)
	}
	mesh.WaitFor(t, 30*time.Second, "tw1 knows the session", func() bool {
		_, where, err := viewer.hosts.Place(run.Session)
		return err == nil && where == "tw0"
	})
	mesh.WaitFor(t, 10*time.Second, "the terminal is ready", func() bool {
		l, _ := owner.hosts.Room().Screen(run.Session)
		return len(l) > 0 && bytes.Contains([]byte(l[0]), []byte("ready"))
	})
	a, first := attachVia(t, viewer, run.Session, false)
	if first.End != nil || !bytes.Contains(first.Screen, []byte("ready")) || first.ReadOnly || first.Session != run.Session {
		t.Fatalf("first frame %+v", first)
	}
	w, wfirst := attachVia(t, owner, run.Session[:10], true)
	if !wfirst.ReadOnly {
		t.Fatal("a read-only attach may type")
	}
	if err := api.WriteFrame(a, &api.AttachFrame{Data: []byte("hello")}); err != nil {
		t.Fatal(err)
	}
	readUntil(t, a, "hello")
	readUntil(t, w, "hello")
	if err := api.WriteFrame(a, &api.AttachFrame{Detach: true}); err != nil {
		t.Fatal(err)
	}
	a.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		f, err := api.ReadAttachFrame(a)
		if err != nil {
			t.Fatalf("no end after the detach: %v", err)
		}
		if f.End != nil {
			break
		}
	}
	if !owner.hosts.Room().Has(run.Session) {
		t.Fatal("the detach ended the agent")
	}
}
