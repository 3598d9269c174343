package taskapi

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wiretest"
	"github.com/harn-dev/harn/node/tasks/taskwire"
)

// TestEveryFieldCrossesTheWire: an action, a result and a permission
// request with every field set come back from their messages (through
// the protobuf encoding) as they went: a field added to one of these
// types and not to its message fails here.
func TestEveryFieldCrossesTheWire(t *testing.T) {
	var a taskwire.Action
	wiretest.Fill(&a)
	var ma api.TaskAction
	roundTrip(t, ActionToAPI(a), &ma)
	back, err := ActionFromAPI(&ma)
	if err != nil || !reflect.DeepEqual(back, a) {
		t.Errorf("action: %+v (%v), want %+v", back, err, a)
	}

	var r taskwire.Result
	wiretest.Fill(&r)
	var mr api.TaskResult
	roundTrip(t, ResultToAPI(r), &mr)
	rb, err := ResultFromAPI(&mr)
	if err != nil || !reflect.DeepEqual(rb, r) {
		t.Errorf("result: %+v (%v), want %+v", rb, err, r)
	}

	var q taskwire.Request
	wiretest.Fill(&q)
	var mq api.PermissionRequest
	roundTrip(t, RequestToAPI(q), &mq)
	if qb := RequestFromAPI(&mq); !reflect.DeepEqual(qb, q) {
		t.Errorf("request: %+v, want %+v", qb, q)
	}

	var d taskwire.Query
	wiretest.Fill(&d)
	d.Wait = wiretest.When.Sub(wiretest.When.Add(-3e9)) // whole milliseconds cross
	var md api.DecideQuery
	roundTrip(t, QueryToAPI(d), &md)
	if db := QueryFromAPI(&md); !reflect.DeepEqual(db, d) {
		t.Errorf("query: %+v, want %+v", db, d)
	}
}

// TestAnActionWithoutGrantsKeepsTheDefaultProfile: nil grants (the
// default profile) and an empty list (no grants) stay apart on the wire.
func TestAnActionWithoutGrantsKeepsTheDefaultProfile(t *testing.T) {
	for _, g := range [][]taskwire.Grant{nil, {}} {
		var m api.TaskAction
		roundTrip(t, ActionToAPI(taskwire.Action{Op: taskwire.OpStart, Grants: g}), &m)
		a, err := ActionFromAPI(&m)
		if err != nil || (a.Grants == nil) != (g == nil) || len(a.Grants) != 0 {
			t.Errorf("grants %#v came back as %#v (%v)", g, a.Grants, err)
		}
	}
}

func roundTrip(t *testing.T, in, out proto.Message) {
	t.Helper()
	b, err := proto.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
}

// FuzzFromAPI: whatever bytes a peer sends as a task action, result or
// permission request, reading them never panics.
func FuzzFromAPI(f *testing.F) {
	var r taskwire.Result
	wiretest.Fill(&r)
	b, _ := proto.Marshal(ResultToAPI(r))
	f.Add(b)
	var a taskwire.Action
	wiretest.Fill(&a)
	b, _ = proto.Marshal(ActionToAPI(a))
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var ma api.TaskAction
		if proto.Unmarshal(b, &ma) == nil {
			_, _ = ActionFromAPI(&ma)
		}
		var mr api.TaskResult
		if proto.Unmarshal(b, &mr) == nil {
			_, _ = ResultFromAPI(&mr)
		}
		var mq api.PermissionRequest
		if proto.Unmarshal(b, &mq) == nil {
			_ = RequestFromAPI(&mq)
		}
		var md api.DecideQuery
		if proto.Unmarshal(b, &md) == nil {
			_ = QueryFromAPI(&md)
		}
	})
}
