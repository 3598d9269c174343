package raftstore

import (
	"testing"

	"github.com/hashicorp/raft"
)

// A heartbeat in flight when the store closes finishes before the stores
// close, and no later heartbeat reaches raft (hashicorp/raft#717).
func TestHeartbeatNeverReachesClosedStores(t *testing.T) {
	g := &guardedTransport{} // the gate needs no network
	entered, release := make(chan struct{}), make(chan struct{})
	calls := 0
	fn := g.gate(func(rpc raft.RPC) {
		calls++
		close(entered)
		<-release
		rpc.Respond(nil, nil)
	})
	resp := make(chan raft.RPCResponse, 2)
	go fn(raft.RPC{RespChan: resp})
	<-entered
	quiesced := make(chan struct{})
	go func() { g.quiesce(); close(quiesced) }()
	select {
	case <-quiesced:
		t.Fatal("quiesce returned while a heartbeat was in flight")
	case <-resp:
		t.Fatal("in-flight heartbeat answered before it was released")
	default:
	}
	close(release)
	<-quiesced
	<-resp
	fn(raft.RPC{RespChan: resp})
	if r := <-resp; r.Error != raft.ErrTransportShutdown {
		t.Fatalf("heartbeat after quiesce: %v, want ErrTransportShutdown", r.Error)
	}
	if calls != 1 {
		t.Fatalf("raft's handler ran %d times, want 1", calls)
	}
}
