package node

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/harn-dev/harn/node/alerts/notifysvc"
	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/api/wiretest"
	"github.com/harn-dev/harn/node/cluster"
	"github.com/harn-dev/harn/node/coordsvc"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/node/trust"
	"github.com/harn-dev/harn/node/trustadmin"
	"github.com/harn-dev/harn/raftstore"
)

// TestEveryFieldCrossesTheWire: each value the node sends (a registry
// record, a coordination result, the mesh's views, the admin answers)
// with every field set comes back from its message, through the protobuf
// encoding, as it went: a field added to one of these types and not to
// its message fails here.
func TestEveryFieldCrossesTheWire(t *testing.T) {
	check := func(name string, in any, msg proto.Message, back func(proto.Message) any) {
		t.Helper()
		b, err := proto.Marshal(msg)
		if err != nil {
			t.Fatal(err)
		}
		out := msg.ProtoReflect().New().Interface()
		if err := proto.Unmarshal(b, out); err != nil {
			t.Fatal(err)
		}
		if got := back(out); !reflect.DeepEqual(got, in) {
			t.Errorf("%s: %+v, want %+v", name, got, in)
		}
	}
	var rec raftstore.Record
	wiretest.Fill(&rec)
	check("record", rec, cluster.RecordToAPI(&rec), func(m proto.Message) any { return cluster.RecordFromAPI(m.(*api.RegistryRecord)) })

	var body coordsvc.CoordBody
	wiretest.Fill(&body)
	check("coord body", body, wire.CoordRequestOf(coordsvc.CoordRelease, body), func(m proto.Message) any { return coordsvc.BodyOf(m.(*api.CoordRequest)) })
	var res coordsvc.CoordResult
	wiretest.Fill(&res)
	check("coord result", res, coordsvc.ResultToAPI(res), func(m proto.Message) any { return wire.CoordResultFromAPI(m.(*api.CoordResult)) })

	var d ledger.Diagnostic
	wiretest.Fill(&d)
	check("diagnostic", d, wire.DiagnosticToAPI(d), func(m proto.Message) any { return wire.DiagnosticFromAPI(m.(*api.Diagnostic)) })
	var mv MemberView
	wiretest.Fill(&mv)
	check("member", mv, wire.MemberToAPI(mv), func(m proto.Message) any { return wire.MemberFromAPI(m.(*api.Member)) })
	var rv RaftView
	wiretest.Fill(&rv)
	check("raft", rv, wire.RaftToAPI(rv), func(m proto.Message) any { return wire.RaftFromAPI(m.(*api.RaftStats)) })
	var wv WebhookView
	wiretest.Fill(&wv)
	check("webhook", wv, notifysvc.WebhookToAPI(&wv), func(m proto.Message) any { return wire.WebhookFromAPI(m.(*api.Webhook)) })
	var dv DesktopView
	wiretest.Fill(&dv)
	check("desktop", dv, notifysvc.DesktopToAPI(dv), func(m proto.Message) any { return wire.DesktopFromAPI(m.(*api.Desktop)) })

	var tc wire.TokenCreated
	wiretest.Fill(&tc)
	check("token", tc, trustadmin.TokenCreatedToAPI(tc), func(m proto.Message) any { return trustadmin.TokenCreatedFromAPI(m.(*api.TokenCreated)) })
	var tr trust.TokenRecord
	wiretest.Fill(&tr)
	check("token record", []trust.TokenRecord{tr}, &api.TokenListResponse{Tokens: trustadmin.TokenRecordsToAPI([]trust.TokenRecord{tr})},
		func(m proto.Message) any { return trustadmin.TokenRecordsFromAPI(m.(*api.TokenListResponse).Tokens) })
	var kv wire.KeyringView
	wiretest.Fill(&kv)
	check("keyring", kv, trustadmin.KeyringToAPI(kv), func(m proto.Message) any { return wire.KeyringFromAPI(m.(*api.KeyringView)) })
	var rk wire.Revoked
	wiretest.Fill(&rk)
	check("revoked", rk, trustadmin.RevokedToAPI(rk), func(m proto.Message) any { return trustadmin.RevokedFromAPI(m.(*api.Revoked)) })
	var ca wire.CAStatus
	wiretest.Fill(&ca)
	check("ca", ca, trustadmin.CAStatusToAPI(ca), func(m proto.Message) any { return trustadmin.CAStatusFromAPI(m.(*api.CAStatusResponse)) })
}
