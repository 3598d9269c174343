package api

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestTheHookRoundTripHasItsOwnFile: the messages of the hook's one round
// trip (Local.Append with its tool call's question and answer) are in
// hook.proto, and only they, with no imports. A process's first use of a
// message builds the full descriptors of its whole file, so the hook,
// which runs twice per tool call of every agent, builds these few and not
// the sixty-odd of harn.proto and values.proto.
func TestTheHookRoundTripHasItsOwnFile(t *testing.T) {
	want := []string{"AppendRequest", "AppendResponse", "DecideQuery", "DecideResponse", "Event", "PathClaim"}
	f := File_hook_proto
	var got []string
	for i := 0; i < f.Messages().Len(); i++ {
		got = append(got, string(f.Messages().Get(i).Name()))
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("hook.proto holds %v, want %v: a message the hook does not send or read belongs in harn.proto or values.proto", got, want)
	}
	if n := f.Imports().Len(); n != 0 {
		t.Errorf("hook.proto imports %d files, want none", n)
	}
	for _, m := range []protoreflect.ProtoMessage{&AppendRequest{}, &AppendResponse{}, &DecideQuery{}, &DecideResponse{}, &Event{}, &PathClaim{}} {
		if p := m.ProtoReflect().Descriptor().ParentFile().Path(); p != "hook.proto" {
			t.Errorf("%s is in %s, want hook.proto", m.ProtoReflect().Descriptor().FullName(), p)
		}
	}
}
