package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/harn-dev/harn/cli/hook"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/util/text"
)

// `harn attach SESSION` on a hosted session: the agent's own terminal,
// full screen, through the node that hosts it. The client opens an attach
// on its local socket (api.AttachPreface); the local node serves it, or
// relays it to the owner over the cluster channel. A session that is not
// hosted (harn's own) gets the TUI of harn chat, as before.

// DetachKey leaves an attach (Ctrl+]); the agent runs on.
const DetachKey = 0x1d

// reasonNotHosted is the node's reason for a session it does not host.
const reasonNotHosted = "NOT_HOSTED"

// errNotHosted: the session is not hosted; attach falls back to chat.
var errNotHosted = errors.New("not a hosted session")

// attachTerm is the client's terminal.
type attachTerm struct {
	in, out *os.File
	old     *term.State
	once    sync.Once
}

func (t *attachTerm) size() (rows, cols uint32) {
	if c, r, err := term.GetSize(int(t.out.Fd())); err == nil && r > 0 && c > 0 {
		return uint32(r), uint32(c)
	}
	return 24, 80
}

// raw puts the terminal in raw mode on the alternate screen.
func (t *attachTerm) raw() error {
	old, err := term.MakeRaw(int(t.in.Fd()))
	if err != nil {
		return err
	}
	t.old = old
	t.out.WriteString("\x1b[?1049h")
	return nil
}

// restore leaves the alternate screen and raw mode; safe twice, on every
// exit path.
func (t *attachTerm) restore() {
	t.once.Do(func() {
		if t.old == nil {
			return
		}
		t.out.WriteString("\x1b[0m\x1b[?25h\x1b[?1049l")
		_ = term.Restore(int(t.in.Fd()), t.old)
	})
}

// attachHosted attaches this terminal to hosted session handle; it
// returns errNotHosted for a session that is not hosted.
func attachHosted(c *cobra.Command, handle string, readOnly bool) error {
	in, inOK := c.InOrStdin().(*os.File)
	out, outOK := c.OutOrStdout().(*os.File)
	p := hook.PlaceOf(c)
	if !inOK || !outOK || !term.IsTerminal(int(in.Fd())) || !term.IsTerminal(int(out.Fd())) {
		if !isHosted(c, p, handle) {
			return errNotHosted // harn chat's attach says what it needs
		}
		return hook.UsageErr(fmt.Errorf("attach: %s is a hosted terminal; attach to it from a terminal", handle))
	}
	if _, err := hook.ProbeSocket(p.Socket); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(c.Context(), 5*time.Second)
	conn, err := hook.DialSocket(ctx, p.Socket)
	cancel()
	if err != nil {
		return hook.NoNode(p)
	}
	defer conn.Close()
	t := &attachTerm{in: in, out: out}
	rows, cols := t.size()
	if err := api.OpenAttach(conn, &api.AttachOpen{Session: handle, Rows: rows, Cols: cols, ReadOnly: readOnly}); err != nil {
		return hook.NoNode(p)
	}
	first, err := api.ReadAttachFrame(conn)
	if err != nil {
		return fmt.Errorf("attach: the node closed the attach (%w); it may be a harnd older than this harn", err)
	}
	if e := first.GetEnd(); e != nil {
		if e.ErrorReason == reasonNotHosted {
			return errNotHosted
		}
		if err := api.AttachError(e); err != nil {
			return hostedErr(err, p)
		}
		return errors.New(text.OneLine(e.Reason))
	}
	session := first.Session
	if err := t.raw(); err != nil {
		return fmt.Errorf("attach: raw mode: %w", err)
	}
	defer t.restore()
	return runAttach(c, t, conn, first, session)
}

// runAttach moves the bytes until the attach ends; then it says why.
func runAttach(c *cobra.Command, t *attachTerm, conn net.Conn, first *api.AttachFrame, session string) error {
	t.out.Write(first.Screen)
	var wmu sync.Mutex
	send := func(f *api.AttachFrame) error {
		wmu.Lock()
		defer wmu.Unlock()
		return api.WriteFrame(conn, f)
	}
	sig := make(chan os.Signal, 4)
	signal.Notify(sig, syscall.SIGWINCH, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGINT)
	defer signal.Stop(sig)
	detached := make(chan struct{})
	var detachOnce sync.Once
	detach := func() {
		detachOnce.Do(func() {
			close(detached)
			send(&api.AttachFrame{Detach: true})
		})
	}
	// Keys: everything up to the detach key is typed; a read-only attach
	// types nothing. The reader ends with the process (it blocks on the
	// terminal), which exits right after the attach ends.
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := t.in.Read(buf)
			b := buf[:n]
			for i, k := range b {
				if k == DetachKey {
					if i > 0 && !first.ReadOnly {
						send(&api.AttachFrame{Data: append([]byte(nil), b[:i]...)})
					}
					detach()
					return
				}
			}
			if n > 0 && !first.ReadOnly {
				if send(&api.AttachFrame{Data: append([]byte(nil), b...)}) != nil {
					return
				}
			}
			if err != nil {
				detach()
				return
			}
		}
	}()
	frames := make(chan *api.AttachFrame)
	ended := make(chan error, 1)
	go func() {
		for {
			f, err := api.ReadAttachFrame(conn)
			if err != nil {
				ended <- err
				return
			}
			frames <- f
		}
	}()
	why := ""
	for why == "" {
		select {
		case s := <-sig:
			if s == syscall.SIGWINCH {
				r, cl := t.size()
				if !first.ReadOnly {
					send(&api.AttachFrame{Size: &api.AttachSize{Rows: r, Cols: cl}})
				}
				continue
			}
			detach()
			why = "detached (" + s.String() + ")"
		case f := <-frames:
			if len(f.Data) > 0 {
				t.out.Write(f.Data)
			}
			if f.End != nil {
				why = "the attach ended: " + text.OneLine(f.End.Reason)
			}
		case err := <-ended:
			if errors.Is(err, io.EOF) {
				why = "the node closed the attach"
			} else {
				why = "the attach broke: " + text.OneLine(err.Error())
			}
		case <-detached:
			why = "detached"
		}
	}
	conn.Close()
	t.restore()
	w := c.ErrOrStderr()
	if why == "detached" || why == "detached (interrupt)" {
		fmt.Fprintf(w, "detached; the agent runs on: harn attach %s\n", text.Sanitize(session))
		return nil
	}
	fmt.Fprintf(w, "%s: %s\n", text.Sanitize(session), why)
	return nil
}

// isHosted asks the roster whether handle is a hosted session.
func isHosted(c *cobra.Command, p hook.Place, handle string) bool {
	hosted := false
	_ = withNode(c, func(ctx context.Context, cl *client, _ hook.Place) error {
		res, err := cl.api.Get(ctx, &api.SessionRequest{Id: handle})
		hosted = err == nil && res.GetSession().GetHosted() != nil
		return nil
	})
	return hosted
}
