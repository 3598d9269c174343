package hookwire_test

import (
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"pgregory.net/rapid"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/hookwire"
)

// Generators of the hook's messages. Strings may hold any bytes: the codec
// makes them valid UTF-8 (as protobuf requires), so the generated code
// must read them back as the sanitized text.

func genStr(t *rapid.T, label string) string {
	return rapid.OneOf(rapid.Just(""), rapid.StringN(0, 12, -1), rapid.Just("\xff\xfeé\x00")).Draw(t, label)
}

func genBytes(t *rapid.T, label string) []byte {
	return rapid.SliceOfN(rapid.Byte(), 0, 16).Draw(t, label)
}

func genEvent(t *rapid.T) *hookwire.Event {
	return &hookwire.Event{Id: genStr(t, "id"), SessionId: genStr(t, "sid"), ParentSessionId: genStr(t, "psid"), Type: genStr(t, "type"),
		TsUnixNano: rapid.Int64().Draw(t, "ts"), Agent: genStr(t, "agent"), Node: genStr(t, "node"), Seq: rapid.Uint64().Draw(t, "seq"),
		AttrsJson: genBytes(t, "attrs"), TsSet: rapid.Bool().Draw(t, "tsset")}
}

func genQuery(t *rapid.T) *hookwire.DecideQuery {
	q := &hookwire.DecideQuery{Phase: genStr(t, "phase"), Session: genStr(t, "qs"), Task: genStr(t, "task"), Tool: genStr(t, "tool"),
		Input: genBytes(t, "input"), Call: genStr(t, "call"), Failed: rapid.Bool().Draw(t, "failed"), WaitMs: rapid.Int64().Draw(t, "wait"),
		Cwd: genStr(t, "cwd")}
	for range rapid.IntRange(0, 3).Draw(t, "claims") {
		q.Claims = append(q.Claims, &hookwire.PathClaim{Session: genStr(t, "cs"), Repo: genStr(t, "repo"),
			Paths: rapid.SliceOfN(rapid.StringN(0, 6, -1), 0, 3).Draw(t, "paths"), Phase: genStr(t, "cp"),
			Abs: rapid.SliceOfN(rapid.StringN(0, 6, -1), 0, 3).Draw(t, "abs")})
	}
	return q
}

// toAPI* are the generated messages with the same fields, for proto.Equal.

// valid is s as the codec sends it: protobuf strings are UTF-8.
func valid(s string) string { return strings.ToValidUTF8(s, "\uFFFD") }

func toAPIQuery(q *hookwire.DecideQuery) *api.DecideQuery {
	if q == nil {
		return nil
	}
	out := &api.DecideQuery{Phase: valid(q.Phase), Session: valid(q.Session), Task: valid(q.Task), Tool: valid(q.Tool),
		Input: q.Input, Call: valid(q.Call), Failed: q.Failed, WaitMs: q.WaitMs, Cwd: valid(q.Cwd)}
	for _, c := range q.Claims {
		pc := &api.PathClaim{Session: valid(c.Session), Repo: valid(c.Repo), Phase: valid(c.Phase)}
		for _, p := range c.Paths {
			pc.Paths = append(pc.Paths, valid(p))
		}
		for _, p := range c.Abs {
			pc.Abs = append(pc.Abs, valid(p))
		}
		out.Claims = append(out.Claims, pc)
	}
	return out
}

// decodes checks that b, the codec's encoding, is read by the generated
// code as want.
func decodes(t *rapid.T, b []byte, got, want proto.Message) {
	if err := proto.Unmarshal(b, got); err != nil {
		t.Fatalf("the generated code refuses the codec's bytes: %v", err)
	}
	if !proto.Equal(got, want) {
		t.Fatalf("the generated code reads\n%v\nwant\n%v", got, want)
	}
}

// TestHookwireIsTheProtoEncoding: every message the hook writes is read by
// the node's generated code as the same message, and every reply the
// generated code writes is read by the hook as the same reply.
func TestHookwireIsTheProtoEncoding(t *testing.T) {
	t.Run("AppendRequest", rapid.MakeCheck(func(t *rapid.T) {
		m := &hookwire.AppendRequest{ContextFor: genStr(t, "cf"), NameFor: genStr(t, "nf")}
		want := &api.AppendRequest{ContextFor: valid(m.ContextFor), NameFor: valid(m.NameFor)}
		for range rapid.IntRange(0, 3).Draw(t, "events") {
			e := genEvent(t)
			m.Events = append(m.Events, e)
			want.Events = append(want.Events, &api.Event{Id: valid(e.Id), SessionId: valid(e.SessionId), ParentSessionId: valid(e.ParentSessionId),
				Type: valid(e.Type), TsUnixNano: e.TsUnixNano, Agent: valid(e.Agent), Node: valid(e.Node), Seq: e.Seq, AttrsJson: e.AttrsJson, TsSet: e.TsSet})
		}
		if rapid.Bool().Draw(t, "decide") {
			m.Decide = genQuery(t)
			want.Decide = toAPIQuery(m.Decide)
		}
		decodes(t, m.Marshal(), new(api.AppendRequest), want)
	}))
	t.Run("DecideRequest", rapid.MakeCheck(func(t *rapid.T) {
		m := &hookwire.DecideRequest{}
		if rapid.Bool().Draw(t, "query") {
			m.Query = genQuery(t)
		}
		decodes(t, m.Marshal(), new(api.DecideRequest), &api.DecideRequest{Query: toAPIQuery(m.Query)})
	}))
	t.Run("DiagnoseRequest", rapid.MakeCheck(func(t *rapid.T) {
		m := &hookwire.DiagnoseRequest{Agent: genStr(t, "a"), Error: genStr(t, "e"), TsUnixNano: rapid.Int64().Draw(t, "ts"),
			InputBytes: rapid.Int32().Draw(t, "n"), InputDigest: genStr(t, "d")}
		decodes(t, m.Marshal(), new(api.DiagnoseRequest), &api.DiagnoseRequest{Agent: valid(m.Agent), Error: valid(m.Error),
			TsUnixNano: m.TsUnixNano, InputBytes: m.InputBytes, InputDigest: valid(m.InputDigest)})
	}))
	t.Run("ApprovalRequest", rapid.MakeCheck(func(t *rapid.T) {
		m := &hookwire.ApprovalRequest{Session: genStr(t, "s"), Agent: genStr(t, "a"), Tool: genStr(t, "t"), Input: genBytes(t, "i"),
			WaitMs: rapid.Int64().Draw(t, "w"), RequestKey: genStr(t, "k"), ParentSession: genStr(t, "p"), SessionWide: rapid.Bool().Draw(t, "sw"),
			Cwd: genStr(t, "cwd")}
		decodes(t, m.Marshal(), new(api.ApprovalRequest), &api.ApprovalRequest{Session: valid(m.Session), Agent: valid(m.Agent),
			Tool: valid(m.Tool), Input: m.Input, WaitMs: m.WaitMs, RequestKey: valid(m.RequestKey), ParentSession: valid(m.ParentSession),
			SessionWide: m.SessionWide, Cwd: valid(m.Cwd)})
	}))
	t.Run("LocalCall", rapid.MakeCheck(func(t *rapid.T) {
		m := &hookwire.LocalCall{Method: genStr(t, "m"), Body: genBytes(t, "b"), TimeoutMs: rapid.Int64().Draw(t, "t")}
		decodes(t, m.Marshal(), new(api.LocalCall), &api.LocalCall{Method: valid(m.Method), Body: m.Body, TimeoutMs: m.TimeoutMs})
		// and back: the node's call as the hook's codec reads it (the
		// fuzz target reads arbitrary bytes).
		b, _ := proto.Marshal(&api.LocalCall{Method: valid(m.Method), Body: m.Body, TimeoutMs: m.TimeoutMs})
		var got hookwire.LocalCall
		if err := got.Unmarshal(b); err != nil || got.Method != valid(m.Method) || string(got.Body) != string(m.Body) || got.TimeoutMs != m.TimeoutMs {
			t.Fatalf("read back %+v, %v", got, err)
		}
	}))
	t.Run("LocalReply", rapid.MakeCheck(func(t *rapid.T) {
		want := &api.LocalReply{Code: rapid.Uint32().Draw(t, "c"), Message: valid(genStr(t, "m")), Reason: valid(genStr(t, "r")),
			Body: genBytes(t, "b")}
		if n := rapid.IntRange(0, 3).Draw(t, "meta"); n > 0 {
			want.Meta = map[string]string{}
			for range n {
				want.Meta[valid(genStr(t, "k"))] = valid(genStr(t, "v"))
			}
		}
		b, _ := proto.Marshal(want)
		var got hookwire.LocalReply
		if err := got.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		back := &api.LocalReply{Code: got.Code, Message: got.Message, Reason: got.Reason, Meta: got.Meta, Body: got.Body}
		if !proto.Equal(back, want) {
			t.Fatalf("the hook reads %v, want %v", back, want)
		}
		decodes(t, got.Marshal(), new(api.LocalReply), want)
	}))
	t.Run("AppendResponse", rapid.MakeCheck(func(t *rapid.T) {
		want := &api.AppendResponse{Ids: rapid.SliceOfN(rapid.StringN(0, 6, -1), 0, 3).Draw(t, "ids"), Duplicates: rapid.Int32().Draw(t, "d"),
			AdditionalContext: valid(genStr(t, "ac")), PendingName: valid(genStr(t, "pn"))}
		if rapid.Bool().Draw(t, "decision") {
			want.Decision = &api.DecideResponse{Decision: valid(genStr(t, "de")), Reason: valid(genStr(t, "re")), Task: valid(genStr(t, "ta")), Call: valid(genStr(t, "ca"))}
		}
		b, _ := proto.Marshal(want)
		var got hookwire.AppendResponse
		if err := got.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		back := &api.AppendResponse{Ids: got.Ids, Duplicates: got.Duplicates, AdditionalContext: got.AdditionalContext, PendingName: got.PendingName}
		if d := got.Decision; d != nil {
			back.Decision = &api.DecideResponse{Decision: d.Decision, Reason: d.Reason, Task: d.Task, Call: d.Call}
		}
		if !proto.Equal(back, want) {
			t.Fatalf("the hook reads %v, want %v", back, want)
		}
	}))
	t.Run("ApprovalResponse", rapid.MakeCheck(func(t *rapid.T) {
		want := &api.ApprovalResponse{Decision: valid(genStr(t, "d")), Reason: valid(genStr(t, "r")), Request: valid(genStr(t, "q")),
			By: valid(genStr(t, "b")), SessionWide: rapid.Bool().Draw(t, "sw")}
		b, _ := proto.Marshal(want)
		var got hookwire.ApprovalResponse
		if err := got.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		if got.Decision != want.Decision || got.Reason != want.Reason || got.Request != want.Request || got.By != want.By || got.SessionWide != want.SessionWide {
			t.Fatalf("the hook reads %+v, want %v", got, want)
		}
	}))
}

// TestHookwireSkipsUnknownFields: a reply from a newer node, with fields
// this hook does not know (of every wire type), reads as the fields it
// knows.
func TestHookwireSkipsUnknownFields(t *testing.T) {
	b, _ := proto.Marshal(&api.AppendResponse{AdditionalContext: "ctx", PendingName: "n"})
	b = append(b, 0x30|0, 7)                      // field 6, varint
	b = append(b, 0x38|1, 1, 2, 3, 4, 5, 6, 7, 8) // field 7, fixed64
	b = append(b, 0x40|2, 2, 'h', 'i')            // field 8, bytes
	b = append(b, 0x48|5, 1, 2, 3, 4)             // field 9, fixed32
	var got hookwire.AppendResponse
	if err := got.Unmarshal(b); err != nil || got.AdditionalContext != "ctx" || got.PendingName != "n" {
		t.Fatalf("%+v %v", got, err)
	}
}

// FuzzHookwireReplies: any bytes read as a reply or an error, never a
// panic: the hook decodes what its socket's peer sends.
func FuzzHookwireReplies(f *testing.F) {
	b, _ := proto.Marshal(&api.LocalReply{Code: 3, Message: "m", Meta: map[string]string{"k": "v"}, Body: []byte{0x1a, 1, 'x'}})
	f.Add(b)
	b, _ = proto.Marshal(&api.AppendResponse{Ids: []string{"a"}, Decision: &api.DecideResponse{Decision: "deny"}})
	f.Add(b)
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Add([]byte{0x0a, 0x80, 0x80, 0x80, 0x80, 0x08})
	f.Fuzz(func(t *testing.T, in []byte) {
		var r hookwire.LocalReply
		_ = r.Unmarshal(in)
		var a hookwire.AppendResponse
		_ = a.Unmarshal(in)
		var p hookwire.ApprovalResponse
		_ = p.Unmarshal(in)
		var c hookwire.LocalCall
		_ = c.Unmarshal(in)
		_ = new(hookwire.DiagnoseResponse).Unmarshal(in)
		_ = new(hookwire.DecideResponse).Unmarshal(in)
		_ = new(hookwire.AppendRequest).Unmarshal(in)
		// What the generated code accepts, the codec accepts too.
		if proto.Unmarshal(in, new(api.AppendResponse)) == nil {
			if err := a.Unmarshal(in); err != nil {
				t.Fatalf("the generated code reads %x, the codec refuses it: %v", in, err)
			}
		}
	})
}
