package hookwire

import (
	"encoding/json"

	"github.com/harn-dev/harn/presence"
)

// The messages, by their .proto names and field numbers. A zero field is
// not written (proto3), a set message field is, and an unknown field is
// skipped on read.

// Event is harn.v1.Event (hook.proto).
type Event struct {
	Id, SessionId, ParentSessionId, Type string
	TsUnixNano                           int64
	Agent, Node                          string
	Seq                                  uint64
	AttrsJson                            []byte
	TsSet                                bool
}

func (m *Event) appendTo(b []byte) []byte {
	b = putString(b, 1, m.Id)
	b = putString(b, 2, m.SessionId)
	b = putString(b, 3, m.ParentSessionId)
	b = putString(b, 4, m.Type)
	b = putInt(b, 5, m.TsUnixNano)
	b = putString(b, 6, m.Agent)
	b = putString(b, 7, m.Node)
	b = putUint(b, 8, m.Seq)
	b = putBytes(b, 9, m.AttrsJson)
	return putBool(b, 10, m.TsSet)
}

// PathClaim is harn.v1.PathClaim (hook.proto).
type PathClaim struct {
	Session, Repo string
	Paths         []string
	Phase         string
	Abs           []string
}

func (m *PathClaim) appendTo(b []byte) []byte {
	b = putString(b, 1, m.Session)
	b = putString(b, 2, m.Repo)
	b = putStrings(b, 3, m.Paths)
	b = putString(b, 4, m.Phase)
	return putStrings(b, 5, m.Abs)
}

// DecideQuery is harn.v1.DecideQuery (hook.proto).
type DecideQuery struct {
	Phase, Session, Task, Tool string
	Input                      []byte
	Call                       string
	Failed                     bool
	WaitMs                     int64
	Claims                     []*PathClaim
	Cwd                        string
}

func (m *DecideQuery) appendTo(b []byte) []byte {
	b = putString(b, 1, m.Phase)
	b = putString(b, 2, m.Session)
	b = putString(b, 3, m.Task)
	b = putString(b, 4, m.Tool)
	b = putBytes(b, 5, m.Input)
	b = putString(b, 6, m.Call)
	b = putBool(b, 7, m.Failed)
	b = putInt(b, 8, m.WaitMs)
	for _, c := range m.Claims {
		b = putMsg(b, 9, c.appendTo)
	}
	return putString(b, 10, m.Cwd)
}

// AppendRequest is harn.v1.AppendRequest (hook.proto).
type AppendRequest struct {
	Events              []*Event
	ContextFor, NameFor string
	Decide              *DecideQuery
}

// Marshal is the message's protobuf encoding.
func (m *AppendRequest) Marshal() []byte {
	var b []byte
	for _, e := range m.Events {
		b = putMsg(b, 1, e.appendTo)
	}
	b = putString(b, 2, m.ContextFor)
	b = putString(b, 3, m.NameFor)
	if m.Decide != nil {
		b = putMsg(b, 5, m.Decide.appendTo)
	}
	return b
}

// DecideResponse is harn.v1.DecideResponse (hook.proto).
type DecideResponse struct {
	Decision, Reason, Task, Call string
}

// Unmarshal reads the message's protobuf encoding.
func (m *DecideResponse) Unmarshal(b []byte) error {
	*m = DecideResponse{}
	r := reader{b: b}
	for {
		num, wt, ok := r.next()
		if !ok {
			return r.err
		}
		switch num {
		case 1:
			m.Decision = r.str(wt)
		case 2:
			m.Reason = r.str(wt)
		case 3:
			m.Task = r.str(wt)
		case 4:
			m.Call = r.str(wt)
		default:
			r.skip(wt)
		}
	}
}

// AppendResponse is harn.v1.AppendResponse (hook.proto).
type AppendResponse struct {
	Ids               []string
	Duplicates        int32
	AdditionalContext string
	PendingName       string
	Decision          *DecideResponse
}

// Unmarshal reads the message's protobuf encoding.
func (m *AppendResponse) Unmarshal(b []byte) error {
	*m = AppendResponse{}
	r := reader{b: b}
	for {
		num, wt, ok := r.next()
		if !ok {
			return r.err
		}
		switch num {
		case 1:
			if wt == wtBytes {
				m.Ids = append(m.Ids, string(r.bytes()))
			} else {
				r.skip(wt)
			}
		case 2:
			m.Duplicates = int32(r.int(wt))
		case 3:
			m.AdditionalContext = r.str(wt)
		case 4:
			m.PendingName = r.str(wt)
		case 5:
			d := new(DecideResponse)
			r.msg(wt, d.Unmarshal)
			m.Decision = d
		default:
			r.skip(wt)
		}
	}
}

// DiagnoseRequest is harn.v1.DiagnoseRequest (harn.proto).
type DiagnoseRequest struct {
	Agent, Error string
	TsUnixNano   int64
	InputBytes   int32
	InputDigest  string
}

// Marshal is the message's protobuf encoding.
func (m *DiagnoseRequest) Marshal() []byte {
	var b []byte
	b = putString(b, 1, m.Agent)
	b = putString(b, 2, m.Error)
	b = putInt(b, 3, m.TsUnixNano)
	b = putInt(b, 4, int64(m.InputBytes))
	return putString(b, 5, m.InputDigest)
}

// DecideRequest is harn.v1.DecideRequest (harn.proto).
type DecideRequest struct {
	Query *DecideQuery
}

// Marshal is the message's protobuf encoding.
func (m *DecideRequest) Marshal() []byte {
	if m.Query == nil {
		return nil
	}
	return putMsg(nil, 2, m.Query.appendTo)
}

// ApprovalRequest is harn.v1.ApprovalRequest (harn.proto).
type ApprovalRequest struct {
	Session, Agent, Tool string
	Input                []byte
	WaitMs               int64
	RequestKey           string
	ParentSession        string
	SessionWide          bool
	Cwd                  string
}

// Marshal is the message's protobuf encoding.
func (m *ApprovalRequest) Marshal() []byte {
	var b []byte
	b = putString(b, 1, m.Session)
	b = putString(b, 2, m.Agent)
	b = putString(b, 3, m.Tool)
	b = putBytes(b, 4, m.Input)
	b = putInt(b, 5, m.WaitMs)
	b = putString(b, 6, m.RequestKey)
	b = putString(b, 7, m.ParentSession)
	b = putBool(b, 8, m.SessionWide)
	return putString(b, 9, m.Cwd)
}

// ApprovalResponse is harn.v1.ApprovalResponse (harn.proto).
type ApprovalResponse struct {
	Decision, Reason, Request, By string
	SessionWide                   bool
}

// Unmarshal reads the message's protobuf encoding.
func (m *ApprovalResponse) Unmarshal(b []byte) error {
	*m = ApprovalResponse{}
	r := reader{b: b}
	for {
		num, wt, ok := r.next()
		if !ok {
			return r.err
		}
		switch num {
		case 1:
			m.Decision = r.str(wt)
		case 2:
			m.Reason = r.str(wt)
		case 3:
			m.Request = r.str(wt)
		case 4:
			m.By = r.str(wt)
		case 5:
			m.SessionWide = r.boolean(wt)
		default:
			r.skip(wt)
		}
	}
}

// Empty is a reply the hook reads nothing of (harn.v1.DiagnoseResponse).
type Empty struct{}

// Unmarshal checks that b is a well-formed message.
func (Empty) Unmarshal(b []byte) error {
	r := reader{b: b}
	for {
		_, wt, ok := r.next()
		if !ok {
			return r.err
		}
		r.skip(wt)
	}
}

// LocalCall is harn.v1.LocalCall (local.proto): one call on the local wire.
type LocalCall struct {
	Method    string
	Body      []byte
	TimeoutMs int64
}

// Marshal is the message's protobuf encoding.
func (m *LocalCall) Marshal() []byte {
	b := make([]byte, 0, len(m.Method)+len(m.Body)+24)
	b = putString(b, 1, m.Method)
	b = putBytes(b, 2, m.Body)
	return putInt(b, 3, m.TimeoutMs)
}

// Unmarshal reads the message's protobuf encoding.
func (m *LocalCall) Unmarshal(b []byte) error {
	*m = LocalCall{}
	r := reader{b: b}
	for {
		num, wt, ok := r.next()
		if !ok {
			return r.err
		}
		switch num {
		case 1:
			m.Method = r.str(wt)
		case 2:
			if wt == wtBytes {
				m.Body = r.bytes()
			} else {
				r.skip(wt)
			}
		case 3:
			m.TimeoutMs = r.int(wt)
		default:
			r.skip(wt)
		}
	}
}

// LocalReply is harn.v1.LocalReply (local.proto): a call's answer.
type LocalReply struct {
	Code    uint32
	Message string
	Reason  string
	Meta    map[string]string
	Body    []byte
}

// Marshal is the message's protobuf encoding (map entries in key order
// is not promised, as protobuf does not promise it).
func (m *LocalReply) Marshal() []byte {
	var b []byte
	b = putUint(b, 1, uint64(m.Code))
	b = putString(b, 2, m.Message)
	b = putString(b, 3, m.Reason)
	for k, v := range m.Meta {
		b = putMsg(b, 4, func(e []byte) []byte { return putString(putString(e, 1, k), 2, v) })
	}
	return putBytes(b, 5, m.Body)
}

// Unmarshal reads the message's protobuf encoding.
func (m *LocalReply) Unmarshal(b []byte) error {
	*m = LocalReply{}
	r := reader{b: b}
	for {
		num, wt, ok := r.next()
		if !ok {
			return r.err
		}
		switch num {
		case 1:
			m.Code = uint32(r.int(wt))
		case 2:
			m.Message = r.str(wt)
		case 3:
			m.Reason = r.str(wt)
		case 4:
			var k, v string
			r.msg(wt, func(e []byte) error {
				er := reader{b: e}
				for {
					n, t, ok := er.next()
					if !ok {
						return er.err
					}
					switch n {
					case 1:
						k = er.str(t)
					case 2:
						v = er.str(t)
					default:
						er.skip(t)
					}
				}
			})
			if r.err == nil {
				if m.Meta == nil {
					m.Meta = map[string]string{}
				}
				m.Meta[k] = v
			}
		case 5:
			if wt == wtBytes {
				m.Body = r.bytes()
			} else {
				r.skip(wt)
			}
		default:
			r.skip(wt)
		}
	}
}

// EventOf is e on the wire (as node/api/wire's EventToAPI).
func EventOf(e *presence.Event) *Event {
	out := &Event{Id: e.ID, SessionId: e.SessionID, ParentSessionId: e.ParentSessionID,
		Type: e.Type, Agent: e.Agent, Node: e.Node, Seq: e.Seq}
	if !e.TS.IsZero() {
		out.TsUnixNano, out.TsSet = e.TS.UnixNano(), true
	}
	if len(e.Attrs) > 0 {
		out.AttrsJson, _ = json.Marshal(e.Attrs)
	}
	return out
}
