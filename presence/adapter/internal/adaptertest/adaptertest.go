// Package adaptertest runs the table, fold and fuzz checks every hook
// adapter's tests share. It is imported only by tests.
package adaptertest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/harn-dev/harn/presence"
	"github.com/harn-dev/harn/presence/adapter"
)

// Now is the hook start time the tests pass in.
var Now = time.Date(2026, 8, 12, 10, 2, 0, 0, time.UTC)

// Secret marks raw content in test payloads (prompts, tool inputs and
// outputs, messages): it must never reach an attribute.
const Secret = "SECRET"

// Digest is a keyed digest standing in for the node's HMAC.
func Digest(b []byte) string {
	m := hmac.New(sha256.New, []byte("test-node-key"))
	m.Write(b)
	return "hmac:" + hex.EncodeToString(m.Sum(nil))
}

// Input is a hook input for payload on stdin, at Now, with Digest.
func Input(payload string) adapter.Input {
	return adapter.Input{Stdin: []byte(payload), Now: Now, Digest: Digest}
}

// Want describes one expected event. Attrs are checked as a subset; a nil
// value asserts that the key is absent.
type Want struct {
	Type, Session, Parent string
	Attrs                 map[string]any
}

// Case is one table row: a payload and what it must map to.
type Case struct {
	Name    string
	Payload string
	// Args, when set, are the hook's arguments (Codex notify).
	Args []string
	// Err is true when the input must be refused as malformed.
	Err bool
	// NoDigest runs the case with a nil Digest.
	NoDigest bool
	Native   string
	Session  string
	Wants    bool
	Events   []Want
	// TS, when set, is the expected event time (else Now).
	TS time.Time
	// Context, PendingName and Output: Output(res, Reply{Context,
	// PendingName}) must equal Output.
	Context, PendingName, Output string
}

// Run checks every case against a.
func Run(t *testing.T, a adapter.Adapter, agent string, cases []Case) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			in := Input(c.Payload)
			in.Args = c.Args
			if c.NoDigest {
				in.Digest = nil
			}
			res, err := a.Decode(in)
			if c.Err {
				if err == nil {
					t.Fatalf("Decode accepted malformed input: %+v", res)
				}
				if !errors.Is(err, adapter.ErrMalformed) {
					t.Fatalf("error %v does not wrap ErrMalformed", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if res.Native != c.Native || res.SessionID != c.Session || res.WantsContext != c.Wants {
				t.Errorf("result native=%q session=%q wants=%v; want %q %q %v",
					res.Native, res.SessionID, res.WantsContext, c.Native, c.Session, c.Wants)
			}
			ts := c.TS
			if ts.IsZero() {
				ts = Now
			}
			CheckEvents(t, res, agent, ts, !c.NoDigest)
			if len(res.Events) != len(c.Events) {
				t.Fatalf("got %d events %s; want %d", len(res.Events), Types(res.Events), len(c.Events))
			}
			for i, w := range c.Events {
				e := res.Events[i]
				if e.Type != w.Type || e.SessionID != w.Session || e.ParentSessionID != w.Parent {
					t.Errorf("event %d = %s session=%q parent=%q; want %s %q %q",
						i, e.Type, e.SessionID, e.ParentSessionID, w.Type, w.Session, w.Parent)
				}
				for k, v := range w.Attrs {
					got, ok := e.Attrs[k]
					if v == nil {
						if ok {
							t.Errorf("event %d (%s) has attr %s=%v; want none", i, e.Type, k, got)
						}
						continue
					}
					if !reflect.DeepEqual(got, v) {
						t.Errorf("event %d (%s) attr %s = %#v; want %#v", i, e.Type, k, got, v)
					}
				}
			}
			if out := string(a.Output(res, adapter.Reply{Context: c.Context, PendingName: c.PendingName})); out != c.Output {
				t.Errorf("Output = %q; want %q", out, c.Output)
			}
		})
	}
}

// CheckEvents asserts what holds for every event an adapter emits: it
// validates, carries the agent, the time, the native name and (with a
// digest) the digest, has no id, node or seq, and no attribute holds raw
// content.
func CheckEvents(t *testing.T, res adapter.Result, agent string, ts time.Time, digest bool) {
	t.Helper()
	for i := range res.Events {
		e := &res.Events[i]
		if err := e.Validate(); err != nil {
			t.Errorf("event %d (%s) does not validate: %v", i, e.Type, err)
		}
		if e.Agent != agent || !e.TS.Equal(ts) || e.ID != "" || e.Node != "" || e.Seq != 0 {
			t.Errorf("event %d: agent=%q ts=%v id=%q node=%q seq=%d; want agent %q ts %v and no id/node/seq",
				i, e.Agent, e.TS, e.ID, e.Node, e.Seq, agent, ts)
		}
		if got := e.AttrString("native"); got != res.Native {
			t.Errorf("event %d: attr native = %q; want %q", i, got, res.Native)
		}
		if _, ok := e.Attrs[presence.AttrDigest]; ok != digest {
			t.Errorf("event %d: digest present = %v; want %v", i, ok, digest)
		}
		for k, v := range e.Attrs {
			if strings.Contains(fmt.Sprint(v), Secret) {
				t.Errorf("event %d: attr %s leaks raw content: %v", i, k, v)
			}
		}
	}
}

// Types lists the event types, for messages.
func Types(evs []presence.Event) string {
	ts := make([]string, len(evs))
	for i := range evs {
		ts[i] = evs[i].Type
	}
	return "[" + strings.Join(ts, " ") + "]"
}

// Step is one hook invocation of a fold test and the activity of session
// after it.
type Step struct {
	Payload string
	Args    []string
	Want    presence.Activity
}

// Fold decodes the steps in order (one second apart, ids ascending, as the
// node would stamp them), folds session's events after each one and checks
// its activity.
func Fold(t *testing.T, a adapter.Adapter, session string, steps []Step) {
	t.Helper()
	var evs []presence.Event
	n := 0
	for i, s := range steps {
		in := Input(s.Payload)
		in.Args = s.Args
		in.Now = Now.Add(time.Duration(i) * time.Second)
		res, err := a.Decode(in)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		for _, e := range res.Events {
			n++
			e.ID = fmt.Sprintf("%06d", n)
			if e.SessionID == session {
				evs = append(evs, e)
			}
		}
		st := presence.Fold(append([]presence.Event(nil), evs...))
		if st.Activity != s.Want {
			t.Fatalf("step %d (%s %s): activity %s; want %s", i, res.Native, Types(res.Events), st.Activity, s.Want)
		}
	}
}

// Fuzz runs the shared fuzz body: Decode never panics, refuses only with
// ErrMalformed, and every event it returns validates. When args is true the
// payload is passed as the last argument (Codex notify).
func Fuzz(f *testing.F, adapters []adapter.Adapter, seeds []string) {
	for _, s := range seeds {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, payload []byte, asArg bool) {
		for _, a := range adapters {
			in := adapter.Input{Stdin: payload, Now: Now}
			if asArg {
				in = adapter.Input{Args: []string{"--", string(payload)}, Now: Now, Digest: Digest}
			}
			res, err := a.Decode(in)
			if err != nil {
				if !errors.Is(err, adapter.ErrMalformed) {
					t.Fatalf("%s: error %v does not wrap ErrMalformed", a.Name(), err)
				}
				continue
			}
			if res.SessionID == "" {
				t.Fatalf("%s: result without session", a.Name())
			}
			for i := range res.Events {
				if err := res.Events[i].Validate(); err != nil {
					t.Fatalf("%s: event %d (%s) does not validate: %v", a.Name(), i, res.Events[i].Type, err)
				}
			}
			_ = a.Output(res, adapter.Reply{Context: "peer context", PendingName: "Agent Flint - t"})
		}
	})
}
