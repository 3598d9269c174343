package cli

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/harn-dev/harn/node/api/hookwire"
	"github.com/harn-dev/harn/node/layout"
	"github.com/harn-dev/harn/node/spool"
	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter"
	"github.com/harn-dev/harn/presence/adapter/all"
	"github.com/harn-dev/harn/util/ids"
	"github.com/harn-dev/harn/util/procinfo"
	"github.com/harn-dev/harn/util/text"
)

func newHookCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "hook AGENT",
		Short: "receive one agent hook (" + strings.Join(all.Names(), ", ") + ") on stdin",
		Long: `Reads the agent's hook JSON on stdin, sends the canonical events to the local
node and prints what the agent expects (usually nothing). It always exits 0:
when the node is down or slow the events are spooled to disk and a node is
started in the background; bad input becomes a diagnostic (harn node errors).`,
		Args: cobra.ArbitraryArgs,
		// A flag this harn does not know (say, from a newer harn in the
		// agent's settings) is ignored and recorded as a diagnostic: the
		// event still counts.
		FParseErrWhitelist: cobra.FParseErrWhitelist{UnknownFlags: true},
	}
	// Bad settings (a broken config file, a bad HARN_ variable) must not
	// cost the event: the hook goes on with what it could read and records
	// a diagnostic. Its subcommands (install, uninstall) fail as usual.
	var settingsErr error
	c.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		err := applySettings(cmd)
		if cmd != c {
			return err
		}
		settingsErr = err
		return nil
	}
	c.RunE = func(cmd *cobra.Command, args []string) (err error) {
		defer func() {
			if r := recover(); r != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "harn hook: internal error:", r)
				err = nil
			}
		}()
		return runHook(cmd, args, settingsErr)
	}
	c.Flags().Duration("timeout", 1500*time.Millisecond, "how long to wait for the node before spooling")
	addDecideFlags(c)
	c.AddCommand(hookSubcommands()...)
	return c
}

// hookInputWait bounds how long a hook waits for its agent's payload.
const hookInputWait = 2 * time.Second

func runHook(c *cobra.Command, args []string, settingsErr error) error {
	now := time.Now()
	p := placeOf(c)
	timeout, _ := c.Flags().GetDuration("timeout")
	stderr := c.ErrOrStderr()
	agent := "(none)"
	if len(args) > 0 {
		agent = args[0]
	}
	h := &hookRun{p: p, now: now, timeout: timeout, stderr: stderr, agent: agent}
	// Connect now, so that the connection's handshake overlaps reading
	// and decoding the payload.
	cl, dialErr := dialConn(p)
	if dialErr == nil {
		cl.Connect()
		h.cl = cl
		defer cl.Close()
	}
	if timeout <= 0 {
		h.timeout = 1500 * time.Millisecond
	}
	if errors.Is(dialErr, layout.ErrSocketPermission) {
		// Someone else's socket: the events go to the spool, never to it.
		h.diagnose(text.FirstLine(dialErr.Error())+"; the events were spooled", nil)
	}
	if settingsErr != nil {
		h.diagnose("settings: "+text.FirstLine(settingsErr.Error())+"; the hook went on with the rest", nil)
	}
	if bad := unknownFlags(c, rawArgs(c.Context())); len(bad) > 0 {
		h.diagnose(fmt.Sprintf("unknown flag %s, ignored; run `harn hook --help` for the flags this harn knows, or reinstall the hooks with `harn hook install AGENT`",
			strings.Join(bad, ", ")), nil)
	}
	if len(args) == 0 {
		fmt.Fprintln(stderr, "harn hook: name the agent: one of", all.Names())
		h.diagnose(fmt.Sprintf("no agent named; use `harn hook AGENT` with one of %v", all.Names()), nil)
		return nil
	}
	ad, ok := all.Lookup(args[0])
	if !ok {
		h.diagnose(fmt.Sprintf("unknown agent %q; use one of %v", args[0], all.Names()), nil)
		return nil
	}
	var in []byte
	if len(args) == 1 {
		in = readPayload(c.InOrStdin(), adapter.MaxInputBytes+1, hookInputWait)
	}
	key, err := layout.LoadOrCreateKey(p.DataDir)
	if err != nil {
		key = nil
	}
	h.key = key
	res, err := ad.Decode(adapter.Input{Stdin: in, Args: args[1:], Now: now, Digest: h.digest})
	if err != nil {
		h.diagnose(err.Error(), in)
		return nil
	}
	if len(res.Events) == 0 {
		return nil
	}
	stampEvents(res.Events, now)
	stampRepo(res.Events)
	pl := h.planCall(in, claimRequests(h.agent, in, res.Events))
	pl.request = requestEvent(res.Events)
	reply, answer := h.send(res, asksName(ad, res), pl.body)
	if out := h.decideOutput(c, pl, answer, ad.Output(res, reply)); len(out) > 0 {
		c.OutOrStdout().Write(out)
	}
	return nil
}

// unknownFlags lists the flags in argv (the command line as given) that c
// does not define. Arguments after "--" are not flags.
func unknownFlags(c *cobra.Command, argv []string) []string {
	var bad []string
	for _, a := range argv {
		if a == "--" {
			break
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		if name, ok := strings.CutPrefix(a, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			if name != "help" && c.Flags().Lookup(name) == nil {
				bad = append(bad, "--"+text.FirstLine(name))
			}
			continue
		}
		if sh := a[1:2]; sh != "h" && c.Flags().ShorthandLookup(sh) == nil {
			bad = append(bad, "-"+sh)
		}
	}
	return bad
}

// stampEvents gives each event an id and the agent process that ran the
// hook (the nearest ancestor that is not a transient shell).
func stampEvents(evs []presence.Event, now time.Time) {
	agent, perr := procinfo.AgentOfSelf()
	hosted := hostedID()
	for i := range evs {
		if hosted != "" {
			evs[i].SetAttr(attrHostedID, hosted)
		}
		if evs[i].ID == "" {
			evs[i].ID = ids.New(now)
		}
		if perr == nil {
			evs[i].SetAttr(presence.AttrAgentPID, agent.PID)
			evs[i].SetAttr(presence.AttrAgentStart, agent.Start)
		}
	}
}

type hookRun struct {
	p       place
	now     time.Time
	timeout time.Duration
	stderr  io.Writer
	agent   string
	key     []byte
	cl      *hookwire.Conn // dialed at start; nil if dialing failed
}

// client returns the hook's connection to the node.
func (h *hookRun) client() (*hookwire.Conn, error) {
	if h.cl != nil {
		return h.cl, nil
	}
	cl, err := dialConn(h.p)
	if err != nil {
		return nil, err
	}
	h.cl = cl
	return cl, nil
}

func (h *hookRun) digest(b []byte) string {
	var sum []byte
	if h.key != nil {
		m := hmac.New(sha256.New, h.key)
		m.Write(b)
		sum = m.Sum(nil)
	} else {
		s := sha256.Sum256(b)
		sum = s[:]
	}
	return hex.EncodeToString(sum[:16])
}

// asksName reports whether the adapter answers this event with a pending
// session name (Claude Code's Stop, unless a Stop hook already blocked
// it): only then does the hook ask the node for one, since the node hands
// each re-minted name out once.
func asksName(ad adapter.Adapter, res adapter.Result) bool {
	return !bytes.Equal(ad.Output(res, adapter.Reply{PendingName: "harn"}), ad.Output(res, adapter.Reply{}))
}

// send delivers the events, or spools them when the node does not
// acknowledge them (down, slow, or refusing writes: a full or unwritable
// disk, an append in flight); it returns the node's reply: the peer
// context to inject and a pending session name, if any, and the answer
// to decide (a tool call's question, asked in the same round trip) when
// the node gave one.
func (h *hookRun) send(res adapter.Result, wantName bool, decide *hookwire.DecideQuery) (adapter.Reply, *hookwire.DecideResponse) {
	req := &hookwire.AppendRequest{Decide: decide}
	for i := range res.Events {
		req.Events = append(req.Events, hookwire.EventOf(&res.Events[i]))
	}
	if res.WantsContext {
		req.ContextFor = res.SessionID
	}
	if wantName {
		req.NameFor = res.SessionID
	}
	cl, err := h.client()
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
		var out *hookwire.AppendResponse
		out, err = cl.Append(ctx, req)
		cancel()
		if err == nil {
			return adapter.Reply{Context: out.AdditionalContext, PendingName: out.PendingName}, out.Decision
		}
		var se *hookwire.StatusError
		if errors.As(err, &se) && se.Code() == hookwire.InvalidArgument {
			h.diagnose("node refused events: "+se.Message(), nil)
			return adapter.Reply{}, nil
		}
	}
	h.spool(spool.Record{Events: res.Events}, res.Events[0].ID)
	return adapter.Reply{}, nil
}

func (h *hookRun) spool(rec spool.Record, name string) {
	if _, err := spool.Write(layout.SpoolDir(h.p.DataDir), h.now, name, rec); err != nil {
		h.lost(rec, err)
		return
	}
	if socketDead(h.p.Socket) {
		if err := startNode(h.p); err != nil {
			fmt.Fprintln(h.stderr, "harn hook: could not start a node:", err)
		}
	}
}

// lost says on stderr exactly what a spool write that failed lost (the
// events' ids, types and session, or the diagnostic), and records it as a
// diagnostic with the node when one answers: a node that refuses writes
// keeps it and writes it once its disk takes writes again.
func (h *hookRun) lost(rec spool.Record, err error) {
	msg := "harn hook: could not spool: " + err.Error()
	var we *spool.WriteError
	if errors.As(err, &we) && len(rec.Events) > 0 {
		parts := make([]string, 0, len(rec.Events))
		for _, e := range rec.Events {
			parts = append(parts, e.ID+" ("+e.Type+")")
		}
		msg += "; lost events of session " + rec.Events[0].SessionID + ": " + strings.Join(parts, ", ")
	}
	if rec.Diagnostic != nil {
		msg += "; lost diagnostic: " + rec.Diagnostic.Error
	}
	msg = text.OneLine(msg)
	fmt.Fprintln(h.stderr, msg)
	if rec.Diagnostic != nil {
		return // a lost diagnostic is not sent again as a diagnostic
	}
	cl, cerr := h.client()
	if cerr != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
	defer cancel()
	_, _ = cl.Diagnose(ctx, &hookwire.DiagnoseRequest{Agent: h.agent, Error: msg, TsUnixNano: h.now.UnixNano()})
}

// diagnose records bad input with the node, or spools the diagnostic. The
// raw input is never stored; only its size and keyed digest.
func (h *hookRun) diagnose(msg string, in []byte) {
	d := &hookwire.DiagnoseRequest{Agent: h.agent, Error: msg, TsUnixNano: h.now.UnixNano(), InputBytes: int32(len(in))}
	if len(in) > 0 {
		d.InputDigest = h.digest(in)
	}
	if cl, err := h.client(); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
		_, err = cl.Diagnose(ctx, d)
		cancel()
		if err == nil {
			return
		}
	}
	h.spool(spool.Record{Diagnostic: &spool.Diagnostic{TS: h.now, Source: "hook " + h.agent,
		Error: msg, InputBytes: len(in), InputDigest: d.InputDigest}}, ids.New(h.now))
}

// readPayload reads one complete JSON value from r and stops there: an
// agent that keeps stdin open after writing its payload does not stall the
// hook, and EOF is not required. It reads at most max bytes and gives up
// after wait. Input that is not one JSON value (garbage, a cut-off value,
// too many bytes) comes back as the bytes read so far, for the adapter to
// refuse with a diagnostic. The reader goroutine is owned by the hook
// process, which exits right after.
func readPayload(r io.Reader, max int64, wait time.Duration) []byte {
	buf := &lockedBuffer{}
	ch := make(chan []byte, 1)
	go func() {
		dec := json.NewDecoder(io.TeeReader(io.LimitReader(r, max), buf))
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			ch <- buf.bytes()
			return
		}
		ch <- v
	}()
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case b := <-ch:
		return b
	case <-timer.C:
		return buf.bytes()
	}
}

// lockedBuffer is the bytes a payload reader has taken so far; the hook
// reads them when the reader is still waiting at its deadline.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// envHostedID names the hosted session (node/hosted) of an agent a node
// runs in a terminal it owns; the hook forwards it as attrHostedID, and
// the node ties the events to that session after checking that the agent
// process runs below the hosted one.
const (
	envHostedID  = "HARN_HOSTED_ID"
	attrHostedID = "hosted_id"
)

// hostedID is the hosted session this hook's agent runs in, "" for none
// (or a value that is no hosted session id).
func hostedID() string {
	v := os.Getenv(envHostedID)
	if len(v) < 4 || len(v) > 64 || !strings.HasPrefix(v, "hs-") {
		return ""
	}
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return ""
		}
	}
	return v
}
