package node

import (
	"reflect"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/harn-dev/harn/node/api"
	"github.com/harn-dev/harn/node/api/wire"
	"github.com/harn-dev/harn/node/api/wiretest"
	"github.com/harn-dev/harn/node/cluster"
	"github.com/harn-dev/harn/node/ledger"
	"github.com/harn-dev/harn/node/trust"
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

	var body CoordBody
	wiretest.Fill(&body)
	check("coord body", body, CoordRequestOf(CoordRelease, body), func(m proto.Message) any { return coordBodyOf(m.(*api.CoordRequest)) })
	var res CoordResult
	wiretest.Fill(&res)
	check("coord result", res, CoordResultToAPI(res), func(m proto.Message) any { return CoordResultFromAPI(m.(*api.CoordResult)) })

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
	check("webhook", wv, wire.WebhookToAPI(&wv), func(m proto.Message) any { return wire.WebhookFromAPI(m.(*api.Webhook)) })
	var dv DesktopView
	wiretest.Fill(&dv)
	check("desktop", dv, wire.DesktopToAPI(dv), func(m proto.Message) any { return wire.DesktopFromAPI(m.(*api.Desktop)) })

	var tc TokenCreated
	wiretest.Fill(&tc)
	check("token", tc, TokenCreatedToAPI(tc), func(m proto.Message) any { return TokenCreatedFromAPI(m.(*api.TokenCreated)) })
	var tr trust.TokenRecord
	wiretest.Fill(&tr)
	check("token record", []trust.TokenRecord{tr}, &api.TokenListResponse{Tokens: TokenRecordsToAPI([]trust.TokenRecord{tr})},
		func(m proto.Message) any { return TokenRecordsFromAPI(m.(*api.TokenListResponse).Tokens) })
	var kv KeyringView
	wiretest.Fill(&kv)
	check("keyring", kv, KeyringToAPI(kv), func(m proto.Message) any { return KeyringFromAPI(m.(*api.KeyringView)) })
	var rk Revoked
	wiretest.Fill(&rk)
	check("revoked", rk, RevokedToAPI(rk), func(m proto.Message) any { return RevokedFromAPI(m.(*api.Revoked)) })
	var ca CAStatus
	wiretest.Fill(&ca)
	check("ca", ca, CAStatusToAPI(ca), func(m proto.Message) any { return CAStatusFromAPI(m.(*api.CAStatusResponse)) })
}
